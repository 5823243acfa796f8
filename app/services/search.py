"""Search: Reciprocal Rank Fusion (pure functions) and the search workflow."""

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.config import DEFAULT_RRF_K, RetrievalSettings
from app.embedding import Embedder
from app.embedding.vectors import EmbeddingVector
from app.models import Episode
from app.repositories import episodes as episode_rows
from app.repositories import graph as graph_rows
from app.repositories import record_search
from app.repositories import search as search_rows
from app.repositories.search import Filters, PassageMatch, RankedCandidate
from app.services.timewindow import TimeWindow
from app.text import preprocess_search_query

ALL_TYPES = ("episode", "fact", "rule")
# Searched only when named in `types`; ranked by their own source (repositories/record_search).
RECORD_TYPES = record_search.TYPES

Key = tuple[str, uuid.UUID]


@dataclass(frozen=True)
class Fused:
    """A candidate after fusion; a rank is None when the memory is absent from that list.

    `fused_score` orders the results; `contributions` is its sum split by signal
    (semantic, keyword, time). `rrf_score` is the fused score of RRF fusion.
    """

    memory_type: str
    memory_id: uuid.UUID
    semantic_rank: int | None
    keyword_rank: int | None
    rrf_score: float | None
    time_rank: int | None = None
    fused_score: float | None = None
    contributions: dict[str, float] | None = None


@dataclass(frozen=True)
class FusionWeights:
    """Weights of weighted score fusion: each signal's min-max normalised score times its
    weight."""

    semantic: float = 0.5
    keyword: float = 0.5
    time: float = 0.25
    graph: float = 0.2


def rrf_score(semantic_rank: int | None, keyword_rank: int | None, *, limit: int,
              k: int = DEFAULT_RRF_K) -> float:
    """1/(k + semantic_rank) + 1/(k + keyword_rank); a missing rank counts as limit + 1."""
    missing = limit + 1
    return (1.0 / (k + (semantic_rank if semantic_rank is not None else missing))
            + 1.0 / (k + (keyword_rank if keyword_rank is not None else missing)))


def _fusion_order(item: Fused) -> tuple[Any, ...]:
    absent = float("inf")
    return (-(item.fused_score or 0.0),
            item.semantic_rank if item.semantic_rank is not None else absent,
            item.keyword_rank if item.keyword_rank is not None else absent,
            item.memory_type, str(item.memory_id))


def _by_key(candidates: Sequence[RankedCandidate]) -> dict[Key, RankedCandidate]:
    return {(c.memory_type, c.memory_id): c for c in candidates}


def _normalised(candidates: Sequence[RankedCandidate]) -> dict[Key, float]:
    """Min-max normalised leg scores: the best 1, the worst 0 (all 1 when they tie)."""
    if not candidates:
        return {}
    low, high = min(c.score for c in candidates), max(c.score for c in candidates)
    return {(c.memory_type, c.memory_id):
            (c.score - low) / (high - low) if high > low else 1.0 for c in candidates}


def fuse(semantic: Sequence[RankedCandidate], keyword: Sequence[RankedCandidate], *, limit: int,
         k: int = DEFAULT_RRF_K, boost: Sequence[RankedCandidate] = (), method: str = "rrf",
         weights: FusionWeights = FusionWeights(),
         graph: Sequence[RankedCandidate] = ()) -> list[Fused]:
    """Fuse two ranked lists, best first (then semantic_rank, keyword_rank, stable keys).

    `rrf`: 1/(k + rank) per list, a missing rank counting as limit + 1. `weighted`: each
    list's min-max normalised score times its weight, 0 when missing. A `boost` list (the
    episodes inside the query's time window) adds 1/(k + its rank) (rrf) or
    weights.time * (n - rank + 1) / n (weighted) to the memories it holds. A `graph` list
    (memories near the query's entities, scored in [0, 1]) adds 1/(k + its rank) (rrf) or
    weights.graph * its score (weighted).
    """
    semantic_by, keyword_by, boost_by = _by_key(semantic), _by_key(keyword), _by_key(boost)
    graph_by = _by_key(graph)
    semantic_norm, keyword_norm = _normalised(semantic), _normalised(keyword)
    missing = limit + 1
    fused = []
    for key in dict.fromkeys([*semantic_by, *keyword_by, *boost_by, *graph_by]):
        sem, kw, tb = semantic_by.get(key), keyword_by.get(key), boost_by.get(key)
        near = graph_by.get(key)
        if method == "weighted":
            parts = {"semantic": weights.semantic * semantic_norm.get(key, 0.0),
                     "keyword": weights.keyword * keyword_norm.get(key, 0.0),
                     "time": (weights.time * (len(boost) - tb.rank + 1) / len(boost)
                              if tb else 0.0)}
            if graph:
                parts["graph"] = weights.graph * near.score if near else 0.0
        else:
            parts = {"semantic": 1.0 / (k + (sem.rank if sem else missing)),
                     "keyword": 1.0 / (k + (kw.rank if kw else missing)),
                     "time": 1.0 / (k + tb.rank) if tb else 0.0}
            if graph:
                parts["graph"] = 1.0 / (k + near.rank) if near else 0.0
        total = sum(parts.values())
        fused.append(Fused(key[0], key[1], sem.rank if sem else None, kw.rank if kw else None,
                           total if method == "rrf" else None, tb.rank if tb else None,
                           fused_score=total, contributions=parts))
    return sorted(fused, key=_fusion_order)[:limit]


def single_list(candidates: Sequence[RankedCandidate], *, semantic: bool,
                boost: Sequence[RankedCandidate] = ()) -> list[Fused]:
    """A one-mode result: the list as ranked, without fusion; members of `boost` (the
    episodes inside the query's time window) move ahead, keeping their order."""
    boost_ranks: dict[Key, int] = {(c.memory_type, c.memory_id): c.rank for c in boost}
    listed = [
        Fused(c.memory_type, c.memory_id, c.rank if semantic else None,
              None if semantic else c.rank, None,
              boost_ranks.get((c.memory_type, c.memory_id)))
        for c in candidates
    ]
    return sorted(listed, key=lambda item: item.time_rank is None)


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


def merge_sources(first: Sequence[Fused], second: Sequence[Fused], *, hybrid: bool,
                  limit: int) -> list[Fused]:
    """Two separately ranked result lists as one: by fused score in hybrid mode, else by rank
    (time-boosted memories still first)."""
    def order(item: Fused) -> tuple[Any, ...]:
        return (False if hybrid else item.time_rank is None, *_fusion_order(item))

    return sorted([*first, *second], key=order)[:limit]


async def with_records(session: AsyncSession, *, tenant_id: str, fused: Sequence[Fused],
                       types: Sequence[str], mode: str, vector: EmbeddingVector | None,
                       query: str | None, limit: int, rrf_k: int, method: str,
                       weights: FusionWeights) -> list[Fused]:
    """The memories' results merged with those of the record types asked for (fused the same
    way, each source on its own)."""
    semantic, keyword = await record_search.candidate_lists(
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
            records = await record_search.load_rows(session, record_type, tenant_id=tenant_id,
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
