"""Breadth-first traversal of memory_links and fact-entity anchors, and node summaries."""

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.ext.asyncio import AsyncSession

NodeKey = tuple[str, uuid.UUID]

# Nodes are 'type:uuid' strings inside the walk. Each level of `walk` holds the nodes first
# reached at that hop (`frontier`) and every node reached so far (`visited`): a node is
# expanded once, so cycles end, and the walk stops at `hops` levels or once the node limit is
# passed. `neighbours` follows links both ways plus fact -> entity (`about`) anchors, and
# keeps only neighbours whose row exists for the tenant (a link never leads to a missing row):
# one WHEN per node type.
_NODE_TABLES = {
    "episode": "episodes",
    "fact": "facts",
    "rule": "rules",
    "entity": "entities",
    "run": "runs",
    "procedure": "procedures",
    "arc": "arcs",
}
_ROW_EXISTS = "\n".join(
    f"                  WHEN '{node}' THEN EXISTS (SELECT 1 FROM {table} AS x"
    " WHERE x.id = nb.node_id AND x.tenant_id = :tenant_id)"
    for node, table in _NODE_TABLES.items()
)
_WALK_SQL = text(f"""
WITH RECURSIVE walk(hop, frontier, visited) AS (
    SELECT 0, ARRAY[CAST(:root AS text)], ARRAY[CAST(:root AS text)]
    UNION ALL
    SELECT w.hop + 1, found.nodes, w.visited || found.nodes
    FROM walk AS w
    CROSS JOIN LATERAL (
        SELECT array_agg(fresh.node) AS nodes FROM (
            SELECT DISTINCT nb.node_type || ':' || nb.node_id AS node
            FROM unnest(w.frontier) AS fr(node)
            CROSS JOIN LATERAL (
                SELECT split_part(fr.node, ':', 1) AS node_type,
                       CAST(split_part(fr.node, ':', 2) AS uuid) AS node_id
            ) AS here
            CROSS JOIN LATERAL (
                SELECT l.target_type AS node_type, l.target_id AS node_id
                FROM memory_links AS l
                WHERE l.tenant_id = :tenant_id AND l.source_type = here.node_type
                  AND l.source_id = here.node_id
                  AND l.relation = ANY (CAST(:relations AS text[]))
                UNION ALL
                SELECT l.source_type, l.source_id
                FROM memory_links AS l
                WHERE l.tenant_id = :tenant_id AND l.target_type = here.node_type
                  AND l.target_id = here.node_id
                  AND l.relation = ANY (CAST(:relations AS text[]))
                UNION ALL
                SELECT 'entity', f.entity_id
                FROM facts AS f
                WHERE CAST(:about AS boolean) AND here.node_type = 'fact'
                  AND f.tenant_id = :tenant_id AND f.id = here.node_id AND f.entity_id IS NOT NULL
                UNION ALL
                SELECT 'fact', f.id
                FROM facts AS f
                WHERE CAST(:about AS boolean) AND here.node_type = 'entity'
                  AND f.tenant_id = :tenant_id AND f.entity_id = here.node_id
            ) AS nb
            WHERE NOT (nb.node_type || ':' || nb.node_id) = ANY (w.visited)
              AND CASE nb.node_type
{_ROW_EXISTS}
                  ELSE false
                  END
            ORDER BY node
            LIMIT :max_nodes
        ) AS fresh
    ) AS found
    WHERE w.hop < :hops AND cardinality(w.visited) <= :max_nodes AND found.nodes IS NOT NULL
)
SELECT hop, frontier FROM walk ORDER BY hop
""")


def _node_key(node: str) -> NodeKey:
    node_type, node_id = node.split(":", 1)
    return node_type, uuid.UUID(node_id)


async def walk(
    session: AsyncSession,
    *,
    tenant_id: str,
    root: NodeKey,
    hops: int,
    relations: Sequence[str],
    max_nodes: int,
) -> list[tuple[NodeKey, int]]:
    """Nodes reachable from `root` within `hops` edges with their hop, nearest first.

    Each level is sorted by node and cut at `max_nodes`, so the result may hold a few more than
    `max_nodes` nodes; the caller trims it.
    """
    link_relations = [relation for relation in relations if relation != "about"]
    result = await session.execute(
        _WALK_SQL,
        {
            "root": f"{root[0]}:{root[1]}",
            "tenant_id": tenant_id,
            "hops": hops,
            "relations": link_relations,
            "about": "about" in relations,
            "max_nodes": max_nodes,
        },
    )
    return [(_node_key(node), hop) for hop, frontier in result.all() for node in sorted(frontier)]


_LINKS_AMONG_SQL = text("""
    SELECT l.source_type, l.source_id, l.target_type, l.target_id, l.relation, l.strength
    FROM memory_links AS l
    JOIN unnest(CAST(:types AS text[]), CAST(:ids AS uuid[])) AS s(node_type, node_id)
      ON l.source_type = s.node_type AND l.source_id = s.node_id
    JOIN unnest(CAST(:types AS text[]), CAST(:ids AS uuid[])) AS t(node_type, node_id)
      ON l.target_type = t.node_type AND l.target_id = t.node_id
    WHERE l.tenant_id = :tenant_id AND l.relation = ANY (CAST(:relations AS text[]))
""")

_ANCHORS_AMONG_SQL = text("""
    SELECT id AS fact_id, entity_id FROM facts
    WHERE tenant_id = :tenant_id AND id = ANY (CAST(:fact_ids AS uuid[]))
      AND entity_id = ANY (CAST(:entity_ids AS uuid[]))
""")


async def links_among(
    session: AsyncSession, *, tenant_id: str, nodes: Sequence[NodeKey], relations: Sequence[str]
) -> Sequence[Row[Any]]:
    """The tenant's links whose two ends are both in `nodes`."""
    result = await session.execute(
        _LINKS_AMONG_SQL,
        {
            "types": [node_type for node_type, _ in nodes],
            "ids": [node_id for _, node_id in nodes],
            "tenant_id": tenant_id,
            "relations": list(relations),
        },
    )
    return result.all()


async def anchors_among(
    session: AsyncSession,
    *,
    tenant_id: str,
    fact_ids: Sequence[uuid.UUID],
    entity_ids: Sequence[uuid.UUID],
) -> Sequence[Row[Any]]:
    """(fact_id, entity_id) of the facts in `fact_ids` anchored to an entity in `entity_ids`."""
    if not fact_ids or not entity_ids:
        return []
    result = await session.execute(
        _ANCHORS_AMONG_SQL,
        {"tenant_id": tenant_id, "fact_ids": list(fact_ids), "entity_ids": list(entity_ids)},
    )
    return result.all()


_SUMMARY_SQL = {
    "episode": """SELECT id, left(content, 300) AS text,
                         CASE WHEN expires_at IS NOT NULL AND expires_at <= now()
                              THEN 'expired' ELSE 'active' END AS state
                  FROM episodes
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
    "fact": """SELECT id, left(subject || ' ' || predicate || ': ' || content, 300) AS text,
                      validity AS state
               FROM facts
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
    "rule": """SELECT id, left(content, 300) AS text,
                      CASE WHEN forgotten_at IS NOT NULL THEN 'forgotten'
                           ELSE 'active' END AS state
               FROM rules
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
    "entity": """SELECT id, canonical_name || ' (' || entity_type || ')' AS text,
                        CASE WHEN merged_into_id IS NOT NULL THEN 'merged'
                             ELSE 'active' END AS state
                 FROM entities
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
    "run": """SELECT id, left(task_id || coalesce(': ' || summary, ''), 300) AS text,
                     CASE WHEN finished_at IS NULL THEN 'running'
                          WHEN success THEN 'succeeded'
                          WHEN NOT success THEN 'failed'
                          ELSE 'finished' END AS state
              FROM runs
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
    "procedure": """SELECT id, left(name || coalesce(': ' || nullif(description, ''), ''), 300)
                           AS text,
                           status AS state
                    FROM procedures
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
    "arc": """SELECT id, left(title || coalesce(': ' || nullif(summary, ''), ''), 300) AS text,
                     status AS state
              FROM arcs
                  WHERE tenant_id = :tenant_id AND id = ANY (CAST(:ids AS uuid[]))""",
}


async def summaries(
    session: AsyncSession, *, tenant_id: str, nodes: Sequence[NodeKey]
) -> dict[NodeKey, tuple[str, str]]:
    """(text, state) of each node whose row exists; text is cut to 300 characters."""
    found: dict[NodeKey, tuple[str, str]] = {}
    for node_type, sql in _SUMMARY_SQL.items():
        ids = [node_id for kind, node_id in nodes if kind == node_type]
        if ids:
            result = await session.execute(text(sql), {"tenant_id": tenant_id, "ids": ids})
            for row in result.all():
                found[(node_type, row.id)] = (row.text, row.state)
    return found


# Paths from the root entities over links (either way, weighted by `strength`) and fact ->
# entity anchors (strength 1), at most :fanout neighbours a node and :hops edges. A memory's
# graph score is its best path's strength product divided by its length in hops.
_GRAPH_SCORES_SQL = text("""
WITH RECURSIVE paths(node_type, node_id, hop, strength, root) AS (
    SELECT 'entity'::text, e.id, 0, 1.0::double precision, e.id
    FROM entities AS e
    WHERE e.tenant_id = :tenant_id AND e.id = ANY (CAST(:roots AS uuid[]))
    UNION ALL
    SELECT nb.node_type, nb.node_id, p.hop + 1, p.strength * nb.strength, p.root
    FROM paths AS p
    CROSS JOIN LATERAL (
        SELECT * FROM (
            SELECT l.target_type AS node_type, l.target_id AS node_id, l.strength
            FROM memory_links AS l
            WHERE l.tenant_id = :tenant_id AND l.source_type = p.node_type
              AND l.source_id = p.node_id
            UNION ALL
            SELECT l.source_type, l.source_id, l.strength
            FROM memory_links AS l
            WHERE l.tenant_id = :tenant_id AND l.target_type = p.node_type
              AND l.target_id = p.node_id
            UNION ALL
            SELECT 'fact', f.id, 1.0
            FROM facts AS f
            WHERE p.node_type = 'entity' AND f.tenant_id = :tenant_id AND f.entity_id = p.node_id
            UNION ALL
            SELECT 'entity', f.entity_id, 1.0
            FROM facts AS f
            WHERE p.node_type = 'fact' AND f.tenant_id = :tenant_id AND f.id = p.node_id
              AND f.entity_id IS NOT NULL
        ) AS edges
        ORDER BY edges.strength DESC
        LIMIT :fanout
    ) AS nb
    WHERE p.hop < :hops
)
SELECT node_type, node_id, hop, strength, root, score FROM (
    SELECT DISTINCT ON (node_type, node_id) node_type, node_id, hop, strength, root,
           strength / hop AS score
    FROM paths
    WHERE hop > 0 AND node_type = ANY (CAST(:types AS text[]))
    ORDER BY node_type, node_id, strength / hop DESC, hop
) AS best
ORDER BY score DESC, node_type, node_id
LIMIT :limit
""")


async def graph_scores(
    session: AsyncSession,
    *,
    tenant_id: str,
    roots: Sequence[uuid.UUID],
    types: Sequence[str],
    hops: int,
    fanout: int,
    limit: int,
) -> list[Row[Any]]:
    """The memories of `types` within `hops` of the root entities, best graph score first:
    (node_type, node_id, hop, strength, root, score)."""
    result = await session.execute(
        _GRAPH_SCORES_SQL,
        {
            "tenant_id": tenant_id,
            "roots": list(roots),
            "types": list(types),
            "hops": hops,
            "fanout": fanout,
            "limit": limit,
        },
    )
    return list(result.all())
