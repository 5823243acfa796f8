"""The search workflow: candidate lists, fusion, rows, neighbours, graph paths."""

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.config import RetrievalSettings
from app.embedding import Embedder
from app.embedding.similarity_scale import IDENTITY, SimilarityScale, scale_of
from app.embedding.vectors import EmbeddingVector
from app.formulas.belief import stale_factor
from app.formulas.lifecycle import effective_confidence
from app.models import Episode
from app.repositories import episodes as episode_rows
from app.repositories import events as event_rows
from app.repositories import graph as graph_rows
from app.repositories.fact_time import periods_at
from app.repositories.search import candidates as search_rows
from app.repositories.search import record_sql
from app.repositories.search.candidates import Filters, PassageMatch, RankedCandidate
from app.retrieval.fusion import (
    Fused,
    Key,
    Known,
    ScoredRow,
    fuse,
    fuse_learned,
    known_row,
    merge_sources,
    scaled,
    shares_sessions,
    single_list,
)
from app.retrieval.plan import MEMORY_TYPES, RECORD_TYPES, GraphQuery, SearchPlan
from app.retrieval.query_vectors import (
    QueryVector,
    begin_serving,
    embed_query,
    query_within,
    serving_query,
    while_beginning,
)
from app.retrieval.searcher import Searcher
from app.telemetry.stages import stage

__all__ = ["GraphQuery", "Hit", "GraphPath", "SearchPlan", "query_while_beginning", "search"]


@dataclass(frozen=True)
class Hit(ScoredRow):
    """A memory or record search result: the row with its scores."""

    memory_type: str = field(kw_only=True)
    neighbours: tuple[Episode, ...] = ()
    time_rank: int | None = None
    passage: PassageMatch | None = None
    graph: "GraphPath | None" = None
    harmful_reasons: tuple[str, ...] = ()  # a rule's, oldest first
    # A fact's valid period as believed at the search's known_at (None: as believed now).
    period: tuple[datetime, datetime | None] | None = None


@dataclass(frozen=True)
class GraphPath:
    """Why a memory got a graph boost: its best path from one of the query's entities."""

    entity_id: uuid.UUID
    hops: int
    strength: float
    score: float


async def search(
    session: AsyncSession,
    plan: SearchPlan,
    *,
    searcher: Searcher,
    query_vector: QueryVector | None = None,
) -> list[Hit]:
    """Search the tenant's memories as `plan` says; an empty query finds nothing.

    With `plan.neighbours` > 0 each episode hit carries up to that many turns stored before
    and after it in the same butler and session. A time window boosts the episodes that
    occurred inside it (time_mode "boost": a further list in hybrid mode, a signal of learned
    fusion, moved ahead in one-list modes) or keeps only those ("filter"). Hybrid mode fuses
    the lists by `plan.fusion`; with a graph query (hybrid mode) the memories near its
    entities are a further list, each hit saying its path. When the plan asks for learned or
    weighted fusion (even where learned falls back to RRF), a fact's fused score is
    multiplied by `belief.stale_factor` of its effective confidence. Every hit comes with
    all it shows (neighbours, paths, periods), so a reranker may reorder them once the
    transaction has ended.
    """
    tenant_id, embedder, retrieval = searcher.tenant_id, searcher.embedder, searcher.retrieval
    if not plan.query:
        return []
    if query_vector is None and plan.semantic:
        query_vector = await embed_query(embedder, plan.query, tenant_id=tenant_id)
    keyword_query = plan.query if plan.keyword else None
    vector, scale = await _vector_scan(
        session, plan, embedder=embedder, retrieval=retrieval, query_vector=query_vector
    )
    with stage("prepare"):
        filters = await _exact_filters(session, plan, searcher=searcher)
    stale_behind = plan.mode == "hybrid" and plan.fusion in ("learned", "weighted")
    plan, found, known = await _candidates_for_fusion(
        session, plan, filters=filters, vector=vector, query=keyword_query
    )
    near, paths = await _near_entities(
        session, plan, filters=filters, fanout=retrieval.graph_fanout
    )
    fused, rows = await _fused(
        session,
        plan,
        found,
        tenant_id=tenant_id,
        known=known,
        near=near,
        vector=vector,
        query=keyword_query,
        scale=scale,
    )
    if stale_behind:
        with stage("fusion"):
            fused = scaled(fused, stale_factors(fused, rows))
    if plan.records:
        fused = await with_records(
            session,
            plan,
            tenant_id=tenant_id,
            fused=fused,
            vector=vector,
            query=keyword_query,
            rows=rows,
            scale=scale,
        )
    with stage("load"):
        hits = await load_hits(
            session,
            tenant_id=tenant_id,
            fused=fused,
            vector=vector,
            query=keyword_query,
            loaded=rows,
            language=plan.language,
        )
        return await _described(session, plan, tenant_id=tenant_id, hits=hits, paths=paths)


async def _candidates(
    session: AsyncSession,
    plan: SearchPlan,
    *,
    filters: Filters,
    vector: EmbeddingVector | None,
    query: str | None,
) -> search_rows.Candidates:
    """The plan's candidate lists and their rows, in one statement."""
    with stage("sql"):
        return await search_rows.search_candidates(
            session,
            types=plan.types,
            filters=filters,
            vector=vector,
            query=query,
            limit=plan.depth,
            language=plan.language,
            window=plan.span if plan.time_mode == "boost" and "episode" in plan.types else None,
            passages=search_rows.IN_FULL if plan.learned else search_rows.AS_PARTS,
        )


async def _candidates_for_fusion(
    session: AsyncSession,
    plan: SearchPlan,
    *,
    filters: Filters,
    vector: EmbeddingVector | None,
    query: str | None,
) -> tuple[SearchPlan, search_rows.Candidates, dict[Key, Known]]:
    """The candidates, the plan that fuses them (learned fusion falls back to RRF where no
    memories share a session) and the rows learned fusion can score."""
    found = await _candidates(session, plan, filters=filters, vector=vector, query=query)
    known = known_rows(found.rows) if plan.learned else {}
    if plan.learned and not shares_sessions(known):
        # Memories without sessions between them (notes) give the learned stage's session
        # signals nothing to read, and held out it ranked them below RRF (docs/search.md).
        # RRF's lists are the first `limit` of these unless a passage lifted a memory past
        # its rank as a part.
        plan = replace(plan, fusion="rrf")
        found = (
            found.cut(plan.limit)
            if found.ranked_as_parts()
            else await _candidates(session, plan, filters=filters, vector=vector, query=query)
        )
    return plan, found, known


async def _fused(
    session: AsyncSession,
    plan: SearchPlan,
    found: search_rows.Candidates,
    *,
    tenant_id: str,
    known: dict[Key, Known],
    near: list[RankedCandidate],
    vector: EmbeddingVector | None,
    query: str | None,
    scale: SimilarityScale,
) -> tuple[list[Fused], dict[Key, search_rows.LoadedRow]]:
    """The lists fused into one ranking as the plan says, and the rows loaded for them (for
    learned fusion the graph list's too)."""
    semantic, keyword, boost = found.semantic, found.keyword, found.window
    rows = dict(found.rows)
    if plan.learned:
        with stage("load"):
            near_rows = await missing_rows(
                session,
                tenant_id=tenant_id,
                keys=rows_wanted(near),
                have=rows,
                vector=vector,
                query=query,
                language=plan.language,
            )
        rows.update(near_rows)
        known = {**known, **known_rows(near_rows)}
    with stage("fusion"):
        fused = _fuse_as_planned(
            plan,
            semantic,
            keyword,
            known=known,
            scale=scale,
            boost=boost,
            graph=near,
            window=plan.span,
        )
    return fused, rows


def _fuse_as_planned(
    plan: SearchPlan,
    semantic: Sequence[RankedCandidate],
    keyword: Sequence[RankedCandidate],
    *,
    known: Mapping[Key, Known],
    scale: SimilarityScale,
    boost: Sequence[RankedCandidate] = (),
    graph: Sequence[RankedCandidate] = (),
    window: tuple[datetime, datetime] | None = None,
) -> list[Fused]:
    """The lists fused as the plan says: by the learned ranker, by RRF or weights (hybrid), or
    the one list its mode searches."""
    if plan.learned:
        return fuse_learned(
            semantic,
            keyword,
            known=known,
            limit=plan.limit,
            depth=plan.depth,
            boost=boost,
            window=window,
            graph=graph,
            k=plan.rrf_k,
            scale=scale,
        )
    if plan.mode == "hybrid":
        return fuse(
            semantic,
            keyword,
            limit=plan.limit,
            k=plan.rrf_k,
            boost=boost,
            method=plan.fused_by,
            weights=plan.weights,
            graph=graph,
        )
    return single_list(
        semantic if plan.mode == "semantic" else keyword,
        semantic=plan.mode == "semantic",
        boost=boost,
    )


async def _vector_scan(
    session: AsyncSession,
    plan: SearchPlan,
    *,
    embedder: Embedder,
    retrieval: RetrievalSettings,
    query_vector: QueryVector | None,
) -> tuple[EmbeddingVector | None, SimilarityScale]:
    """The scan settings of the semantic leg, then the query's vector by the serving model and
    the scale learned fusion reads that model's similarities on (none without a vector)."""
    if query_vector is None:
        return None, IDENTITY
    with stage("prepare"):
        await _configure_vector_scan(session, plan, retrieval)
    # Read after the scan settings, so both ride on the transaction's first statement.
    query_vector = await serving_query(session, embedder, query_vector)
    return query_vector.vector, scale_of(query_vector.model) if plan.learned else IDENTITY


async def _configure_vector_scan(
    session: AsyncSession, plan: SearchPlan, retrieval: RetrievalSettings
) -> None:
    await search_rows.configure_vector_scan(
        session,
        ef_search=max(retrieval.hnsw_ef_search, plan.depth),
        max_scan_tuples=retrieval.hnsw_max_scan_tuples,
    )


async def query_while_beginning(
    session: AsyncSession, plan: SearchPlan, *, searcher: Searcher
) -> tuple[QueryVector | None, str | None]:
    """`query_within` for the plan's query when it reads the semantic list (else no vector),
    the transaction that runs `plan` beginning meanwhile with its scan settings: the
    transaction's first round trips wait on the model, not the answer on them."""
    embedder, retrieval = searcher.embedder, searcher.retrieval
    if not plan.semantic or not plan.query:
        return None, None
    if embedder.failed_recently:
        return None, "unavailable"
    await _configure_vector_scan(session, plan, retrieval)
    embedding = query_within(
        embedder,
        plan.query,
        tenant_id=searcher.tenant_id,
        seconds=retrieval.query_embedding_seconds,
    )
    return await while_beginning(embedding, _begin_search(session, plan, searcher=searcher))


async def _begin_search(session: AsyncSession, plan: SearchPlan, *, searcher: Searcher) -> None:
    """The search's transaction begun, and its filter's counts taken (remembered for the
    search that follows)."""
    await begin_serving(session, searcher.embedder)
    await _exact_filters(session, plan, searcher=searcher)


async def _exact_filters(session: AsyncSession, plan: SearchPlan, *, searcher: Searcher) -> Filters:
    """What the plan admits, with the types its filter admits few enough of to rank exactly."""
    return await search_rows.with_exact_types(
        session,
        plan.types,
        _filters(plan, tenant_id=searcher.tenant_id),
        below=searcher.retrieval.filter_exact_below,
    )


async def _near_entities(
    session: AsyncSession, plan: SearchPlan, *, filters: Filters, fanout: int
) -> tuple[list[RankedCandidate], dict[Key, GraphPath]]:
    """The graph list of a hybrid search with entities, and each memory's path; else none."""
    if plan.graph is None or not plan.graph.entities or plan.mode != "hybrid":
        return [], {}
    with stage("graph"):
        return await graph_candidates(
            session,
            filters=filters,
            types=plan.types,
            graph=plan.graph,
            limit=plan.limit,
            fanout=fanout,
        )


def _filters(plan: SearchPlan, *, tenant_id: str) -> Filters:
    """What the plan admits, as the candidate statement filters it."""
    return Filters(
        tenant_id=tenant_id,
        scope=plan.scope,
        min_confidence=plan.min_confidence,
        occurred=plan.span if plan.time_mode == "filter" else None,
        as_of=None if plan.at is None else plan.at.as_of,
        known_at=None if plan.at is None else plan.at.known_at,
        memory_filter=plan.memory_filter,
    )


async def _described(
    session: AsyncSession,
    plan: SearchPlan,
    *,
    tenant_id: str,
    hits: list[Hit],
    paths: Mapping[Key, GraphPath],
) -> list[Hit]:
    """The hits with what each says beside its memory: its graph path, why a rule was
    marked harmful, the episode's neighbouring turns, a fact's period as believed then."""
    if paths:
        hits = [replace(hit, graph=paths.get((hit.memory_type, hit.row.id))) for hit in hits]
    hits = await with_harmful_reasons(session, tenant_id=tenant_id, hits=hits)
    if plan.neighbours > 0:
        hits = await with_neighbours(session, tenant_id=tenant_id, hits=hits, count=plan.neighbours)
    periods = await periods_at(
        session,
        tenant_id=tenant_id,
        at=plan.at,
        facts=[hit.row for hit in hits if hit.memory_type == "fact"],
    )
    if periods:
        hits = [
            replace(hit, period=periods.get(hit.row.id)) if hit.memory_type == "fact" else hit
            for hit in hits
        ]
    return hits


def stale_factors(
    fused: Sequence[Fused], rows: Mapping[Key, search_rows.LoadedRow]
) -> dict[Key, float]:
    """What each fact's fused score is multiplied by: `belief.stale_factor` of its effective
    confidence now (a stale fact drops behind an equally relevant fresh one)."""
    now = now_utc()
    factors = {}
    for item in fused:
        key = (item.memory_type, item.memory_id)
        if item.memory_type == "fact" and key in rows:
            row = rows[key].row
            factors[key] = stale_factor(
                effective_confidence(row.confidence, row.decay_rate, row.last_confirmed_at, now)
            )
    return factors


def rows_wanted(*lists: Sequence[RankedCandidate]) -> list[Key]:
    """The keys of the candidates of `lists`, once each."""
    return list(dict.fromkeys((c.memory_type, c.memory_id) for ranked in lists for c in ranked))


def known_rows(rows: Mapping[Key, search_rows.LoadedRow]) -> dict[Key, Known]:
    """The loaded rows learned fusion can score (those with a similarity)."""
    out = {}
    for key, loaded in rows.items():
        known = known_row(key[0], loaded)
        if known is not None:
            out[key] = known
    return out


async def graph_candidates(
    session: AsyncSession,
    *,
    filters: Filters,
    types: Sequence[str],
    graph: GraphQuery,
    limit: int,
    fanout: int,
) -> tuple[list[RankedCandidate], dict[Key, GraphPath]]:
    """The visible memories within `graph.hops` of its entities, ranked by graph score
    (best path's strength product / hops), and each one's path."""
    rows = await graph_rows.graph_scores(
        session,
        tenant_id=filters.tenant_id,
        roots=graph.entities,
        types=types,
        hops=graph.hops,
        fanout=fanout,
        limit=limit * 4,
    )
    visible: set[Key] = set()
    for memory_type in types:
        ids = [row.node_id for row in rows if row.node_type == memory_type]
        visible |= {
            (memory_type, memory_id)
            for memory_id in await search_rows.visible_ids(
                session, memory_type, filters=filters, ids=ids
            )
        }
    kept = [row for row in rows if (row.node_type, row.node_id) in visible][:limit]
    ranked = [
        RankedCandidate(row.node_type, row.node_id, rank, row.score)
        for rank, row in enumerate(kept, 1)
    ]
    paths = {
        (row.node_type, row.node_id): GraphPath(row.root, row.hop, row.strength, row.score)
        for row in kept
    }
    return ranked, paths


async def with_records(
    session: AsyncSession,
    plan: SearchPlan,
    *,
    tenant_id: str,
    fused: Sequence[Fused],
    vector: EmbeddingVector | None,
    query: str | None,
    rows: dict[Key, search_rows.LoadedRow],
    scale: SimilarityScale = IDENTITY,
) -> list[Fused]:
    """The memories' results merged with those of the record types asked for (fused the same
    way, each source on its own, so their scores compare); learned fusion first loads their
    rows into `rows` and reads their similarities on `scale`."""
    with stage("sql_records"):
        semantic, keyword = await record_sql.candidate_lists(
            session,
            types=plan.records,
            tenant_id=tenant_id,
            vector=vector,
            query=query,
            limit=plan.depth,
            language=plan.language,
        )
    if plan.learned:
        with stage("load"):
            rows.update(
                await missing_rows(
                    session,
                    tenant_id=tenant_id,
                    keys=rows_wanted(semantic, keyword),
                    have=rows,
                    vector=vector,
                    query=query,
                    language=plan.language,
                )
            )
    with stage("fusion"):
        known = known_rows(rows) if plan.learned else {}
        found = _fuse_as_planned(plan, semantic, keyword, known=known, scale=scale)
        return merge_sources(fused, found, hybrid=plan.mode == "hybrid", limit=plan.limit)


async def with_harmful_reasons(
    session: AsyncSession, *, tenant_id: str, hits: Sequence[Hit]
) -> list[Hit]:
    """The hits, each rule with the reasons of its harmful marks (one statement, only when a
    rule that was marked harmful was found)."""
    rule_ids = [
        hit.row.id for hit in hits if hit.memory_type == "rule" and hit.row.harmful_count > 0
    ]
    if not rule_ids:
        return list(hits)
    reasons = await event_rows.harmful_reasons(session, tenant_id=tenant_id, rule_ids=rule_ids)
    return [
        replace(hit, harmful_reasons=tuple(reasons.get(hit.row.id, [])))
        if hit.memory_type == "rule"
        else hit
        for hit in hits
    ]


async def with_neighbours(
    session: AsyncSession, *, tenant_id: str, hits: Sequence[Hit], count: int
) -> list[Hit]:
    """The hits, each episode with its neighbouring turns."""
    episode_ids = [hit.row.id for hit in hits if hit.memory_type == "episode"]
    turns = await episode_rows.neighbours(
        session, tenant_id=tenant_id, ids=episode_ids, count=count
    )
    return [
        replace(hit, neighbours=tuple(turns.get(hit.row.id, ())))
        if hit.memory_type == "episode"
        else hit
        for hit in hits
    ]


async def missing_rows(
    session: AsyncSession,
    *,
    tenant_id: str,
    keys: Sequence[Key],
    have: Mapping[Key, search_rows.LoadedRow],
    vector: EmbeddingVector | None,
    query: str | None,
    language: str | None = None,
) -> dict[Key, search_rows.LoadedRow]:
    """The rows of those `keys` not in `have`, one query per type (`language`: the
    query's, when the request gives it)."""
    rows: dict[Key, search_rows.LoadedRow] = {}
    for memory_type in (*MEMORY_TYPES, *RECORD_TYPES):
        ids = [key[1] for key in keys if key[0] == memory_type and key not in have]
        if not ids:
            continue
        if memory_type in MEMORY_TYPES:
            more = await search_rows.load_rows(
                session,
                memory_type,
                tenant_id=tenant_id,
                ids=ids,
                vector=vector,
                query=query,
                language=language,
            )
        else:
            more = {
                row_id: search_rows.LoadedRow(row, similarity, keyword_score, None)
                for row_id, (row, similarity, keyword_score) in (
                    await record_sql.load_rows(
                        session,
                        memory_type,
                        tenant_id=tenant_id,
                        ids=ids,
                        vector=vector,
                        query=query,
                        language=language,
                    )
                ).items()
            }
        rows.update({(memory_type, row_id): row for row_id, row in more.items()})
    return rows


async def load_hits(
    session: AsyncSession,
    *,
    tenant_id: str,
    fused: Sequence[Fused],
    vector: EmbeddingVector | None,
    query: str | None,
    loaded: Mapping[Key, search_rows.LoadedRow],
    language: str | None = None,
) -> list[Hit]:
    """The fused results with their rows, in fused order: those already `loaded` with the
    candidate lists, the others (graph neighbours, records) fetched with one query per type."""
    rows = dict(loaded)
    rows.update(
        await missing_rows(
            session,
            tenant_id=tenant_id,
            keys=[(f.memory_type, f.memory_id) for f in fused],
            have=rows,
            vector=vector,
            query=query,
            language=language,
        )
    )
    hits = []
    for f in fused:
        if (f.memory_type, f.memory_id) in rows:
            found = rows[(f.memory_type, f.memory_id)]
            hits.append(
                Hit(
                    found.row,
                    found.similarity,
                    found.keyword_score,
                    f.rrf_score,
                    f.semantic_rank,
                    f.keyword_rank,
                    f.fused_score,
                    f.contributions,
                    memory_type=f.memory_type,
                    time_rank=f.time_rank,
                    passage=found.passage,
                )
            )
    return hits
