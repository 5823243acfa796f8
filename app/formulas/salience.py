"""Agent memory as a pure view over the event ledger; no database here.

Three layers, all computed from the same list of ledger events:
* visibility: an agent sees its own events and the events marked globally visible;
* compaction: a reflection replaces the events it summarises, so the events the agent's own
  reflections are based on leave both lists below (the reflection shows instead);
* the recent window: the last `window` visible events, leaving out reflections (they have a
  section of their own);
* salience top-k: score = w_rel*relevance + w_rec*exp(-lambda*dturn) + w_imp*importance(kind)
  over the other visible events, best k returned in chronological order.
A reflection is due once the agent has seen `threshold` visible events since its last one.
"""

import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

REFLECTION_KIND = "agent.reflected"
GLOBAL = "global"
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class LedgerEvent:
    """The fields of a ledger event the views read."""

    id: uuid.UUID
    agent_id: str
    kind: str
    content: str
    turn: int
    position: int
    visibility: str


@dataclass(frozen=True)
class SalienceWeights:
    """The salience formula's weights, recency decay and kind-importance table."""

    relevance: float = 0.30
    recency: float = 0.40
    importance: float = 0.30
    recency_lambda: float = 0.1
    kind_importance: Mapping[str, float] = field(default_factory=dict)
    default_importance: float = 0.5


@dataclass(frozen=True)
class Scored:
    """An event with the parts of its salience."""

    event: LedgerEvent
    relevance: float
    recency: float
    importance: float
    salience: float


@dataclass(frozen=True)
class MemoryView:
    """What one agent remembers at one turn."""

    recent: list[LedgerEvent]
    salient: list[Scored]
    reflections: list[LedgerEvent]
    pending: int
    reflection_due: bool


def is_visible(event: LedgerEvent, agent_id: str) -> bool:
    """Own events of any kind, and globally visible ones."""
    return event.agent_id == agent_id or event.visibility == GLOBAL


def visible(events: Iterable[LedgerEvent], agent_id: str) -> list[LedgerEvent]:
    """The events `agent_id` may see, in ledger order."""
    return sorted((e for e in events if is_visible(e, agent_id)), key=lambda e: e.position)


def keywords(text: str) -> set[str]:
    """Lower-cased word tokens of `text`."""
    return {word.casefold() for word in _WORDS.findall(text)}


def jaccard(left: str, right: str) -> float:
    """|A & B| / |A | B| of the two texts' keyword sets; 0 when both are empty."""
    a, b = keywords(left), keywords(right)
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def recency(event_turn: int, current_turn: int, decay: float) -> float:
    """exp(-lambda * dturn); an event of a later turn than the current one counts as dturn 0."""
    return math.exp(-decay * max(0, current_turn - event_turn))


def importance(kind: str, weights: SalienceWeights) -> float:
    """The kind's weight from the table, else the default."""
    return weights.kind_importance.get(kind, weights.default_importance)


def score(
    event: LedgerEvent,
    *,
    query: str,
    current_turn: int,
    weights: SalienceWeights,
    relevance: float | None = None,
) -> Scored:
    """The salience of one event; `relevance` (e.g. semantic) replaces keyword Jaccard."""
    rel = jaccard(event.content, query) if relevance is None else relevance
    rec = recency(event.turn, current_turn, weights.recency_lambda)
    imp = importance(event.kind, weights)
    total = weights.relevance * rel + weights.recency * rec + weights.importance * imp
    return Scored(event, rel, rec, imp, total)


def top_k(
    events: Sequence[LedgerEvent],
    *,
    query: str,
    current_turn: int,
    k: int,
    weights: SalienceWeights,
    relevance: Mapping[uuid.UUID, float] | None = None,
) -> list[Scored]:
    """The k most salient events in chronological order (ties: the later event wins)."""
    if k <= 0:
        return []
    scored = [
        score(
            e,
            query=query,
            current_turn=current_turn,
            weights=weights,
            relevance=None if relevance is None else relevance.get(e.id, 0.0),
        )
        for e in events
    ]
    best = sorted(scored, key=lambda s: (-s.salience, -s.event.position))[:k]
    return sorted(best, key=lambda s: s.event.position)


def own_reflections(events: Iterable[LedgerEvent], agent_id: str) -> list[LedgerEvent]:
    """The agent's reflections, in ledger order."""
    return sorted(
        (e for e in events if e.kind == REFLECTION_KIND and e.agent_id == agent_id),
        key=lambda e: e.position,
    )


def pending_events(events: Sequence[LedgerEvent], agent_id: str) -> list[LedgerEvent]:
    """Visible events (not reflections) after the agent's last reflection."""
    mine = own_reflections(events, agent_id)
    since = mine[-1].position if mine else -1
    return [
        e for e in visible(events, agent_id) if e.kind != REFLECTION_KIND and e.position > since
    ]


def reflection_due(events: Sequence[LedgerEvent], agent_id: str, threshold: int) -> bool:
    """True when the agent has seen `threshold` visible events since its last reflection."""
    return len(pending_events(events, agent_id)) >= threshold


def view(
    events: Sequence[LedgerEvent],
    *,
    agent_id: str,
    current_turn: int,
    query: str,
    window: int,
    k: int,
    weights: SalienceWeights,
    based_on: Mapping[uuid.UUID, Iterable[uuid.UUID]],
    reflection_threshold: int,
    relevance: Mapping[uuid.UUID, float] | None = None,
) -> MemoryView:
    """The agent's memory at `current_turn`: recent window, salient events, reflections.

    `based_on` maps a reflection's id to the events it summarises; the events behind the
    agent's own reflections leave the recent window and the salient events alike.
    """
    seen = visible(events, agent_id)
    reflections = [e for e in seen if e.kind == REFLECTION_KIND]
    covered = {
        event_id
        for r in reflections
        if r.agent_id == agent_id
        for event_id in based_on.get(r.id, ())
    }
    raw = [e for e in seen if e.kind != REFLECTION_KIND and e.id not in covered]
    recent = raw[-window:]
    in_window = {e.id for e in recent}
    salient = top_k(
        [e for e in raw if e.id not in in_window],
        query=query,
        current_turn=current_turn,
        k=k,
        weights=weights,
        relevance=relevance,
    )
    pending = len(pending_events(events, agent_id))
    return MemoryView(recent, salient, reflections, pending, pending >= reflection_threshold)


def event_line(event: LedgerEvent) -> str:
    """One event as a prompt line."""
    content = " ".join(event.content.split())
    return f"- [turn {event.turn}] {event.agent_id} {event.kind}: {content}"


@dataclass(frozen=True)
class Fitted:
    """The parts of a view that fit the budget, each in chronological order, and the text."""

    recent: list[LedgerEvent]
    salient: list[Scored]
    reflections: list[LedgerEvent]
    text: str


def fit_to_budget(memory: MemoryView, *, max_chars: int) -> Fitted:
    """Keep what fits in `max_chars`: the newest recent events first, then the newest
    reflections, then the most salient events; a line that does not fit is skipped.

    Sections are printed reflections, salient, recent (each chronological); an empty section
    is left out.
    """
    headers = {
        "reflections": "## Reflections",
        "salient": "## Salient events",
        "recent": "## Recent events",
    }
    used = 0
    kept: dict[str, set[uuid.UUID]] = {name: set() for name in headers}

    def take(name: str, candidates: Iterable[LedgerEvent]) -> None:
        nonlocal used
        for event in candidates:
            cost = len(event_line(event)) + 1 + (0 if kept[name] else len(headers[name]) + 2)
            if used + cost <= max_chars:
                kept[name].add(event.id)
                used += cost

    take("recent", reversed(memory.recent))
    take("reflections", reversed(memory.reflections))
    take("salient", [s.event for s in sorted(memory.salient, key=lambda s: -s.salience)])
    recent = [e for e in memory.recent if e.id in kept["recent"]]
    reflections = [e for e in memory.reflections if e.id in kept["reflections"]]
    salient = [s for s in memory.salient if s.event.id in kept["salient"]]
    blocks = []
    for name, section in (
        ("reflections", reflections),
        ("salient", [s.event for s in salient]),
        ("recent", recent),
    ):
        if section:
            blocks.append("\n".join([headers[name], *(event_line(e) for e in section)]))
    return Fitted(recent, salient, reflections, "\n\n".join(blocks))
