"""An entity's neighbourhood drawn as inline SVG: the root in the centre, each hop on a ring."""

import math
from collections import defaultdict
from dataclasses import dataclass

from app.schemas.graph import GraphOut

SIZE = 480
RING = 100
COLOURS = {
    "entity": "#2f6f9f",
    "fact": "#3d8b5a",
    "rule": "#a0652a",
    "episode": "#7a5aa6",
    "run": "#8a4b5e",
}
# The node types the console has a page for; the others (procedures, arcs) are not drawn.
PAGES = {
    "entity": "entities",
    "fact": "facts",
    "rule": "rules",
    "episode": "episodes",
    "run": "runs",
}


@dataclass(frozen=True)
class Placed:
    """A node with its position, colour, label and page."""

    key: str
    x: float
    y: float
    colour: str
    label: str
    href: str
    state: str
    hop: int


@dataclass(frozen=True)
class Line:
    """An edge between two placed nodes, with its relation."""

    x1: float
    y1: float
    x2: float
    y2: float
    relation: str


def layout(graph: GraphOut) -> tuple[list[Placed], list[Line]]:
    """Positions for every node (ring by hop, evenly spaced) and the edges between them."""
    rings: dict[int, list[tuple[str, str]]] = defaultdict(list)
    drawn = [node for node in graph.nodes if node.type in PAGES]
    for node in drawn:
        rings[node.hop].append((node.type, str(node.id)))
    spot: dict[tuple[str, str], tuple[float, float]] = {}
    centre = SIZE / 2
    for hop, keys in rings.items():
        for index, key in enumerate(sorted(keys)):
            angle = 2 * math.pi * index / max(1, len(keys)) + hop * 0.4
            radius = RING * hop
            spot[key] = (centre + radius * math.cos(angle), centre + radius * math.sin(angle))
    placed = []
    for node in drawn:
        x, y = spot[(node.type, str(node.id))]
        label = node.summary if len(node.summary) <= 28 else node.summary[:27] + "…"
        placed.append(
            Placed(
                f"{node.type}:{node.id}",
                x,
                y,
                COLOURS[node.type],
                label,
                f"/ui/{PAGES[node.type]}/{node.id}",
                node.state,
                node.hop,
            )
        )
    lines = []
    for edge in graph.edges:
        start = spot.get((edge.source_type, str(edge.source_id)))
        end = spot.get((edge.target_type, str(edge.target_id)))
        if start and end:
            lines.append(Line(*start, *end, edge.relation))
    return placed, lines
