"""The search workflow: candidate lists, fusion or reranking, rows, neighbours, graph paths."""

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.config import RetrievalSettings
from app.embedding import Embedder
from app.embedding.vectors import EmbeddingVector
from app.models import Episode
from app.repositories import episodes as episode_rows
from app.repositories import graph as graph_rows
from app.retrieval import candidates as search_rows
from app.retrieval import record_sql
from app.retrieval.candidates import Filters, PassageMatch, RankedCandidate
from app.retrieval.fusion import Fused, FusionWeights, Key, fuse, merge_sources, single_list
from app.retrieval.timewindow import TimeWindow
from app.text import preprocess_search_query

ALL_TYPES = ("episode", "fact", "rule")
# Searched only when named in `types`; ranked by their own source (record_sql.py).
RECORD_TYPES = record_sql.TYPES

@dataclass(frozen=True)
class Hit:
    """A search result: the row with its scores."""

    memory_type: str
    row: Any
    similarity: float | None
    keyword_score: float | None
    rrf_score: float | None
    semantic_rank: int | None
    keyword_rank: int | None
    neighbours: tuple[Episode, ...] = ()
    time_rank: int | None = None
    passage: PassageMatch | None = None
    fused_score: float | None = None
    contributions: dict[str, float] | None = None
    graph: "GraphPath | None" = None


@dataclass(frozen=True)
class GraphQuery:
    """Entities a search is about: memories within `hops` links of them rank higher."""

    entities: tuple[uuid.UUID, ...]
    hops: int = 2


@dataclass(frozen=True)
class GraphPath:
    """Why a memory got a graph boost: its best path from one of the query's entities."""

    entity_id: uuid.UUID
    hops: int
    strength: float
    score: float


def graph_query(entities: Sequence[uuid.UUID] | None, hops: int) -> GraphQuery | None:
    """The graph part of a request: None without entities."""
    return GraphQuery(tuple(dict.fromkeys(entities)), hops) if entities else None


async def search(session: AsyncSession, *, tenant_id: str, embedder: Embedder,
                 retrieval: RetrievalSettings, query: str, types: Sequence[str] | None,
                 scope: str | None, mode: str, limit: int, min_confidence: float,
                 neighbours: int = 0, window: TimeWindow | None = None,
                 time_mode: str = "boost", fusion: str | None = None,
                 graph: GraphQuery | None = None) -> list[Hit]:
    """Search the tenant's memories; an empty query (after preprocessing) finds nothing.

    With `neighbours` > 0 each episode hit carries up to that many turns stored before and
    after it in the same butler and session. A time `window` boosts the episodes that
    occurred inside it (`time_mode` "boost": a third RRF list in hybrid mode, moved ahead in
    one-list modes) or keeps only those ("filter"). Hybrid mode fuses the lists by `fusion`
    (rrf or weighted; default: the configured one); with a `graph` query (hybrid mode) the
    memories near its entities are a further list, each hit saying its path.
    """
    cleaned = preprocess_search_query(query)
    if not cleaned:
        return []
    wanted = [t for t in ALL_TYPES if types is None or t in types]
    records = [t for t in RECORD_TYPES if types is not None and t in types]
    vector = (await embedder.aembed(cleaned, tenant_id=tenant_id)
              if mode in ("semantic", "hybrid") else None)
    keyword_query = cleaned if mode in ("keyword", "hybrid") else None
    if vector is not None:
        await search_rows.configure_vector_scan(
            session, ef_search=max(retrieval.hnsw_ef_search, limit),
            max_scan_tuples=retrieval.hnsw_max_scan_tuples)
    span = (window.start, window.end) if window is not None and time_mode != "off" else None
    filters = Filters(tenant_id=tenant_id, scope=scope, min_confidence=min_confidence,
                      occurred=span if time_mode == "filter" else None)
    found = await search_rows.search_candidates(
        session, types=wanted, filters=filters, vector=vector, query=keyword_query, limit=limit,
        window=span if time_mode == "boost" and "episode" in wanted else None)
    semantic, keyword, boost = found.semantic, found.keyword, found.window
    near, paths = (await graph_candidates(session, filters=filters, types=wanted, graph=graph,
                                          limit=limit, fanout=retrieval.graph_fanout)
                   if graph is not None and graph.entities and mode == "hybrid" else ([], {}))
    weights = FusionWeights(retrieval.semantic_weight, retrieval.keyword_weight,
                            retrieval.time_weight, retrieval.graph_weight)
    if mode == "hybrid":
        fused = fuse(semantic, keyword, limit=limit, k=retrieval.rrf_k, boost=boost,
                     method=fusion or retrieval.fusion, weights=weights, graph=near)
    else:
        fused = single_list(semantic if mode == "semantic" else keyword,
                            semantic=mode == "semantic", boost=boost)
    if records:
        fused = await with_records(session, tenant_id=tenant_id, fused=fused, types=records,
                                   mode=mode, vector=vector, query=keyword_query, limit=limit,
                                   rrf_k=retrieval.rrf_k, method=fusion or retrieval.fusion,
                                   weights=weights)
    hits = await load_hits(session, tenant_id=tenant_id, fused=fused, vector=vector,
                           query=keyword_query, loaded=found.rows)
    if paths:
        hits = [replace(hit, graph=paths.get((hit.memory_type, hit.row.id))) for hit in hits]
    if neighbours > 0:
        hits = await with_neighbours(session, tenant_id=tenant_id, hits=hits, count=neighbours)
    return hits


async def graph_candidates(
    session: AsyncSession, *, filters: Filters, types: Sequence[str], graph: GraphQuery,
    limit: int, fanout: int,
) -> tuple[list[RankedCandidate], dict[Key, GraphPath]]:
    """The visible memories within `graph.hops` of its entities, ranked by graph score
    (best path's strength product / hops), and each one's path."""
    rows = await graph_rows.graph_scores(
        session, tenant_id=filters.tenant_id, roots=graph.entities, types=types,
        hops=graph.hops, fanout=fanout, limit=limit * 4)
    visible: set[Key] = set()
    for memory_type in types:
        ids = [row.node_id for row in rows if row.node_type == memory_type]
        visible |= {(memory_type, memory_id) for memory_id in await search_rows.visible_ids(
            session, memory_type, filters=filters, ids=ids)}
    kept = [row for row in rows if (row.node_type, row.node_id) in visible][:limit]
    ranked = [RankedCandidate(row.node_type, row.node_id, rank, row.score)
              for rank, row in enumerate(kept, 1)]
    paths = {(row.node_type, row.node_id): GraphPath(row.root, row.hop, row.strength, row.score)
             for row in kept}
    return ranked, paths


async def with_records(session: AsyncSession, *, tenant_id: str, fused: Sequence[Fused],
                       types: Sequence[str], mode: str, vector: EmbeddingVector | None,
                       query: str | None, limit: int, rrf_k: int, method: str,
                       weights: FusionWeights) -> list[Fused]:
    """The memories' results merged with those of the record types asked for (fused the same
    way, each source on its own)."""
    semantic, keyword = await record_sql.candidate_lists(
        session, types=types, tenant_id=tenant_id, vector=vector, query=query, limit=limit)
    if mode == "hybrid":
        found = fuse(semantic, keyword, limit=limit, k=rrf_k, method=method, weights=weights)
    else:
        found = single_list(semantic if mode == "semantic" else keyword,
                            semantic=mode == "semantic")
    return merge_sources(fused, found, hybrid=mode == "hybrid", limit=limit)


async def with_neighbours(session: AsyncSession, *, tenant_id: str, hits: Sequence[Hit],
                          count: int) -> list[Hit]:
    """The hits, each episode with its neighbouring turns."""
    episode_ids = [hit.row.id for hit in hits if hit.memory_type == "episode"]
    turns = await episode_rows.neighbours(session, tenant_id=tenant_id, ids=episode_ids,
                                          count=count)
    return [replace(hit, neighbours=tuple(turns.get(hit.row.id, ())))
            if hit.memory_type == "episode" else hit for hit in hits]


async def load_hits(session: AsyncSession, *, tenant_id: str, fused: Sequence[Fused],
                    vector: EmbeddingVector | None, query: str | None,
                    loaded: Mapping[Key, search_rows.LoadedRow]) -> list[Hit]:
    """The fused results with their rows, in fused order: those already `loaded` with the
    candidate lists, the others (graph neighbours, records) fetched with one query per type."""
    rows = dict(loaded)
    for memory_type in ALL_TYPES:
        ids = [f.memory_id for f in fused
               if f.memory_type == memory_type and (memory_type, f.memory_id) not in rows]
        if ids:
            more = await search_rows.load_rows(session, memory_type, tenant_id=tenant_id,
                                               ids=ids, vector=vector, query=query)
            rows.update({(memory_type, memory_id): row for memory_id, row in more.items()})
    for record_type in RECORD_TYPES:
        ids = [f.memory_id for f in fused if f.memory_type == record_type]
        if ids:
            records = await record_sql.load_rows(session, record_type, tenant_id=tenant_id,
                                                    ids=ids, vector=vector, query=query)
            rows.update({(record_type, row_id): search_rows.LoadedRow(row, similarity,
                                                                      keyword_score, None)
                         for row_id, (row, similarity, keyword_score) in records.items()})
    hits = []
    for f in fused:
        if (f.memory_type, f.memory_id) in rows:
            found = rows[(f.memory_type, f.memory_id)]
            hits.append(Hit(f.memory_type, found.row, found.similarity, found.keyword_score,
                            f.rrf_score, f.semantic_rank, f.keyword_rank,
                            time_rank=f.time_rank, passage=found.passage,
                            fused_score=f.fused_score, contributions=f.contributions))
    return hits
