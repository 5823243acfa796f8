"""A search request answered end to end, for every surface that offers search (REST, MCP)."""

from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.errors import InvalidInput
from app.core.languages import outside
from app.core.scope import end_transaction
from app.formulas.fact_time import PointInTime, point_in_time
from app.retrieval.plan import RECORD_TYPES, graph_query, plan_search
from app.retrieval.search import Hit, query_while_beginning, search
from app.retrieval.searcher import Searcher
from app.retrieval.timewindow import TimeWindow, parse_time_window
from app.retrieval.user_reranker import Outcome, UserReranker, outcome_of, rerank_step
from app.schemas.filters import filter_tree
from app.schemas.search import SearchRequest
from app.telemetry.stages import stage


@dataclass(frozen=True)
class SearchAnswer:
    """What a search found, with what it read from the request, for the doors to map."""

    mode: str
    hits: list[Hit]
    window: TimeWindow | None
    time_mode: str
    now: datetime
    at: PointInTime | None
    reranker: Outcome | None = None
    semantic_skipped: str | None = None  # why the query had no vector


async def search_memories(
    session: AsyncSession,
    *,
    searcher: Searcher,
    request: SearchRequest,
    reranker: UserReranker | None = None,
) -> SearchAnswer:
    """Search with the configured default mode and the time window read from the query; a
    `reranker` reorders its first results unless the request turned it off, after the
    session's transaction has ended (no later statement may use it)."""
    embedder, retrieval = searcher.embedder, searcher.retrieval
    mode = request.mode or retrieval.default_mode
    if request.entities and mode != "hybrid":
        raise InvalidInput(f"entities boost the hybrid fusion; mode is {mode}", field="entities")
    if request.filter is not None and any(t in RECORD_TYPES for t in request.types or ()):
        raise InvalidInput(
            "filter applies to episodes, facts and rules; search run, "
            "run_message and reflection in a request of their own",
            field="filter",
        )
    now = now_utc()
    at = point_in_time(request.as_of, request.known_at)
    window = parse_time_window(request.query, request.reference_time or now)
    plan = plan_search(
        retrieval,
        query=request.query,
        types=request.types,
        scope=request.scope,
        mode=mode,
        limit=request.limit or retrieval.default_limit,
        min_confidence=request.min_confidence,
        fusion=request.fusion,
        window=window,
        time_mode=request.time_mode,
        graph=graph_query(request.entities, request.graph_hops),
        neighbours=request.neighbours,
        at=at,
        memory_filter=filter_tree(request.filter),
        language=request.language,
    )
    step = rerank_step(reranker, wanted=request.rerank, limit=plan.limit)
    searched = plan if step is None else replace(plan, limit=step.pool)
    vector, skipped = None, None
    if plan.mode == "hybrid" and outside(request.query, embedder.languages, request.language):
        skipped = "language"
    else:
        vector, skipped = await query_while_beginning(session, searched, searcher=searcher)
    if skipped is not None:
        plan, searched = replace(plan, mode="keyword"), replace(searched, mode="keyword")
    hits = await search(session, searched, searcher=searcher, query_vector=vector)
    if step is not None:
        # The search has read all it shows: its connection goes back to the pool before the
        # reranker is waited on, not after.
        await end_transaction(session)
        with stage("rerank"):
            hits = await step.apply(plan.query, hits)
    return SearchAnswer(
        plan.mode,
        hits,
        window,
        request.time_mode,
        now,
        at,
        reranker=outcome_of(reranker, step),
        semantic_skipped=skipped,
    )
