"""Retrieval tools: search, recall and context."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.constants import SearchMode
from app.formulas.fact_time import point_in_time
from app.mcp.args import AsOfArg, ButlerArg, FilterArg, KnownAtArg, OptionalScopeArg, QueryArg
from app.mcp.calls import Caller, JsonObject, build, read_call
from app.mcp.groups import CORE
from app.mcp.toolset import ToolSet
from app.responses.search import context_out, recall_out, search_answer_out
from app.retrieval import requests as retrieval
from app.retrieval.context import build_context
from app.retrieval.plan import graph_query
from app.retrieval.recall import recall
from app.schemas.common import MemoryType
from app.schemas.filters import filter_tree
from app.schemas.search import (
    ContextRequest,
    ContextResponse,
    QueryText,
    RecallRequest,
    RecallResponse,
    SearchRequest,
    SearchResponse,
)

LimitArg = Annotated[int, Field(description="Most results (1-100).")]
TriggerArg = Annotated[QueryText, Field(description="The task or the user's message.")]
EntitiesArg = Annotated[
    list[uuid.UUID] | None,
    Field(
        description="Ids of entities it is about (up to 10): memories linked to them rank higher."
    ),
]
GraphHopsArg = Annotated[int, Field(description="Links away from those entities (1-3).")]
MinConfidenceArg = Annotated[
    float,
    Field(description="Leave out facts and rules whose decayed confidence is below this (0-1)."),
]


tools = ToolSet(CORE)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_search(
    query: QueryArg,
    ctx: Context,
    types: list[MemoryType] | None = None,
    scope: OptionalScopeArg = None,
    mode: SearchMode | None = None,
    limit: LimitArg = 10,
    min_confidence: MinConfidenceArg = 0.2,
    entities: EntitiesArg = None,
    graph_hops: GraphHopsArg = 2,
    as_of: AsOfArg = None,
    known_at: KnownAtArg = None,
    filter: FilterArg = None,
) -> JsonObject:
    """Search episodes, facts and rules by meaning and keywords, e.g. 'what did Ann say about
    the trip?'. For the facts and rules to apply to a task, prefer memory_recall."""
    request = build(
        SearchRequest,
        query=query,
        types=types,
        scope=scope,
        mode=mode,
        limit=limit,
        min_confidence=min_confidence,
        entities=[str(item) for item in entities] if entities else None,
        graph_hops=graph_hops,
        as_of=as_of,
        known_at=known_at,
        filter=filter,
    )

    async def work(session: AsyncSession, caller: Caller) -> SearchResponse:
        return search_answer_out(
            await retrieval.search_memories(
                session,
                searcher=caller.searcher,
                request=request,
                reranker=caller.reranker,
            )
        )

    return await read_call(ctx, work)


@tools.add()
async def memory_recall(
    topic: QueryArg,
    ctx: Context,
    scope: OptionalScopeArg = None,
    limit: LimitArg = 10,
    entities: EntitiesArg = None,
    graph_hops: GraphHopsArg = 2,
    as_of: AsOfArg = None,
    known_at: KnownAtArg = None,
    filter: FilterArg = None,
) -> JsonObject:
    """The facts and rules most worth knowing about a topic before you act, ranked by relevance,
    importance, recency and confidence."""
    request = build(
        RecallRequest,
        topic=topic,
        scope=scope,
        limit=limit,
        entities=[str(item) for item in entities] if entities else None,
        graph_hops=graph_hops,
        as_of=as_of,
        known_at=known_at,
        filter=filter,
    )
    at = point_in_time(request.as_of, request.known_at)

    async def work(session: AsyncSession, caller: Caller) -> RecallResponse:
        recalled = await recall(
            session,
            searcher=caller.searcher,
            topic=request.topic,
            scope=request.scope,
            limit=request.limit,
            min_confidence=request.min_confidence,
            graph=graph_query(request.entities, request.graph_hops),
            at=at,
            memory_filter=filter_tree(request.filter),
        )
        return recall_out(recalled, now_utc(), at)

    return await read_call(ctx, work)


@tools.add()
async def memory_context(
    trigger_prompt: TriggerArg,
    butler: ButlerArg,
    ctx: Context,
    token_budget: int | None = None,
    as_of: AsOfArg = None,
    known_at: KnownAtArg = None,
    filter: FilterArg = None,
) -> JsonObject:
    """A '# Memory Context' block (key facts and active rules) for your system prompt at the
    start of a task, within token_budget."""
    request = build(
        ContextRequest,
        trigger_prompt=trigger_prompt,
        butler=butler,
        token_budget=token_budget,
        as_of=as_of,
        known_at=known_at,
        filter=filter,
    )

    async def work(session: AsyncSession, caller: Caller) -> ContextResponse:
        context = await build_context(
            session,
            searcher=caller.searcher,
            trigger_prompt=request.trigger_prompt,
            butler=request.butler,
            token_budget=request.token_budget,
            at=point_in_time(request.as_of, request.known_at),
            memory_filter=filter_tree(request.filter),
        )
        return context_out(context)

    return await read_call(ctx, work)
