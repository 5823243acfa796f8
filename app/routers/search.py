"""/v1/search, /v1/recall and /v1/context: retrieval."""

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute

from app.core.clock import now_utc
from app.core.errors import problem_responses
from app.deps import QuerySessionDep, RerankerDep, SearcherDep
from app.formulas.fact_time import point_in_time
from app.responses.search import context_out, recall_out, search_answer_out
from app.retrieval import requests as retrieval
from app.retrieval.context import build_context
from app.retrieval.plan import graph_query
from app.retrieval.recall import recall
from app.schemas.filters import filter_tree
from app.schemas.search import (
    SEARCH_DESCRIPTION,
    ContextRequest,
    ContextResponse,
    RecallRequest,
    RecallResponse,
    SearchRequest,
    SearchResponse,
)
from app.telemetry.metrics import observe_read
from app.telemetry.stages import collecting, stage


class TimedRoute(APIRoute):
    """A read route whose answers say where their time went: a Server-Timing header and
    `engram_read_stage_seconds` (an error raised inside has neither)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        operation = self.path.rsplit("/", 1)[-1]

        async def timed(request: Request) -> Response:
            with collecting(operation) as stages:
                response = await handler(request)
            total = stages.finish()
            response.headers["Server-Timing"] = stages.header(total)
            observe_read(stages, total)
            return response

        return timed


router = APIRouter(prefix="/v1", tags=["retrieval"], route_class=TimedRoute)


@router.post(
    "/search",
    response_model=SearchResponse,
    responses=problem_responses(422),
    summary="Hybrid, semantic or keyword search",
    description=SEARCH_DESCRIPTION,
)
async def search_memories(
    body: SearchRequest,
    session: QuerySessionDep,
    searcher: SearcherDep,
    reranker: RerankerDep,
) -> SearchResponse:
    answer = await retrieval.search_memories(
        session,
        searcher=searcher,
        request=body,
        reranker=reranker,
    )
    with stage("serialise"):
        return search_answer_out(answer)


@router.post(
    "/recall",
    response_model=RecallResponse,
    responses=problem_responses(422),
    summary="Facts and rules about a topic, by composite score",
)
async def recall_memories(
    body: RecallRequest,
    session: QuerySessionDep,
    searcher: SearcherDep,
) -> RecallResponse:
    """Hybrid search of facts and rules (limit x recall_pool_factor candidates), re-ranked by
    `0.4 relevance + 0.3 importance/10 + 0.2 recency + 0.1 effective_confidence` (weights
    from settings), ties broken by created_at desc then id asc. `relevance` is the RRF score
    rescaled so the best possible candidate is 1 and the worst 0; `recency` counts from the
    memory's own time (last confirmed, else created), not from its last reference. Memories
    whose effective confidence is below `min_confidence`, or whose cosine similarity to the
    topic is below `[retrieval] relevance_floor` (0.2), are left out; `limit` defaults to
    `[retrieval] default_limit` (20). Every returned memory counts one
    reference (reference_count + 1, last_referenced_at = now), as shown in the response.
    With `as_of` or `known_at`, facts are the versions that held then, as believed then."""
    at = point_in_time(body.as_of, body.known_at)
    recalled = await recall(
        session,
        searcher=searcher,
        topic=body.topic,
        scope=body.scope,
        limit=body.limit,
        min_confidence=body.min_confidence,
        graph=graph_query(body.entities, body.graph_hops),
        reference_time=body.reference_time,
        at=at,
        memory_filter=filter_tree(body.filter),
    )
    with stage("serialise"):
        return recall_out(recalled, body.reference_time or now_utc(), at)


@router.post(
    "/context",
    response_model=ContextResponse,
    responses=problem_responses(422),
    summary="The memory block for an agent's system prompt",
)
async def memory_context(
    body: ContextRequest,
    session: QuerySessionDep,
    searcher: SearcherDep,
) -> ContextResponse:
    """Recall (up to `context_recall_limit`, 20) facts and rules of scope 'global' or the
    butler's (none less similar to the prompt than the relevance floor), then format them:

    ```
    # Memory Context

    ## Key Facts
    - [{subject}] [{predicate}]: {content} (confidence: {effective_confidence:.2f})

    ## Active Rules
    - {content} (maturity: {maturity}, effectiveness: {effectiveness_score:.2f})
    ```
    Items go in composite-score order (ties: created_at desc, id asc); a line that does not
    fit is skipped. The text never exceeds `token_budget * 4` characters; facts may use
    `context_fact_share` of it, rules the rest, and a section's unused share goes to the
    other. A section with no line is left out. Whitespace inside a memory is collapsed to
    single spaces. Each memory placed in the block counts one reference. With `as_of` or
    `known_at`, facts are the versions that held then, as believed then."""
    context = await build_context(
        session,
        searcher=searcher,
        trigger_prompt=body.trigger_prompt,
        butler=body.butler,
        token_budget=body.token_budget,
        reference_time=body.reference_time,
        at=point_in_time(body.as_of, body.known_at),
        memory_filter=filter_tree(body.filter),
    )
    with stage("serialise"):
        return context_out(context)
