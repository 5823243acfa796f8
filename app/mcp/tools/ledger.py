"""Ledger tools: an agent's memory per turn from a shared event ledger, its reflections, and
the ledger's events, as /v1/ledgers offers them."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import CursorArg, PageLimitArg
from app.mcp.calls import Caller, JsonObject, build, call, page_call
from app.mcp.toolset import ToolSet
from app.responses.ledger import (
    agent_context_out,
    agent_event_out,
    event_append_out,
    reflection_out,
)
from app.responses.pages import page_out
from app.schemas.common import Content, Name, Page
from app.schemas.ledger import (
    AgentContextOut,
    AgentContextRequest,
    AgentEventListQuery,
    EventAppendOut,
    EventCreate,
    ReflectionCreate,
    ReflectionOut,
    RelevanceMode,
    Visibility,
)
from app.services import ledger

LedgerArg = Annotated[Name, Field(description="The shared ledger, e.g. one simulation.")]
AgentArg = Annotated[Name, Field(description="The agent's name in the ledger.")]
TurnArg = Annotated[int, Field(description="The turn number (0 or more).")]


tools = ToolSet("ledger")


@tools.add()
async def agent_event_append(
    ledger_name: LedgerArg,
    agent_id: AgentArg,
    kind: Name,
    content: Content,
    turn: TurnArg,
    ctx: Context,
    visibility: Visibility | None = None,
) -> JsonObject:
    """Append an event (agent.spoke, world.observed, clue.found, ...) to a shared ledger; the
    answer names the agents now due a reflection."""
    request = build(
        EventCreate, agent_id=agent_id, kind=kind, content=content, turn=turn, visibility=visibility
    )

    async def work(session: AsyncSession, caller: Caller) -> EventAppendOut:
        return event_append_out(
            await ledger.append_event(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                settings=caller.settings,
                ledger=ledger_name,
                data=request,
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def agent_context(
    ledger_name: LedgerArg,
    agent_id: AgentArg,
    turn: TurnArg,
    ctx: Context,
    query: str = "",
    relevance: RelevanceMode = "keyword",
    token_budget: int | None = None,
) -> JsonObject:
    """What the agent remembers at this turn (recent events, salient older ones, reflections) as
    prompt-ready text; call it at the start of each turn."""
    request = build(
        AgentContextRequest, turn=turn, query=query, relevance=relevance, token_budget=token_budget
    )

    async def work(session: AsyncSession, caller: Caller) -> AgentContextOut:
        return agent_context_out(
            await ledger.agent_context(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                settings=caller.settings,
                ledger=ledger_name,
                agent_id=agent_id,
                request=request,
            )
        )

    return await call(ctx, work)


@tools.add()
async def agent_reflect(
    ledger_name: LedgerArg,
    agent_id: AgentArg,
    belief: Content,
    based_on: list[uuid.UUID],
    ctx: Context,
) -> JsonObject:
    """Post a reflection: one high-level belief synthesising events the agent has seen
    (their ids in based_on). Every agent sees it, and the agent's recent window and
    salient events then leave those events out."""
    request = build(ReflectionCreate, belief=belief, based_on=[str(i) for i in based_on])

    async def work(session: AsyncSession, caller: Caller) -> ReflectionOut:
        return reflection_out(
            await ledger.post_reflection(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                ledger=ledger_name,
                agent_id=agent_id,
                data=request,
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def agent_event_list(
    ledger_name: LedgerArg,
    ctx: Context,
    agent_id: Name | None = None,
    kind: Name | None = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
) -> JsonObject:
    """Every event of a ledger newest first (the whole log, not one agent's view: for
    that, agent_context), optionally of one agent or kind. Pass next_cursor back as cursor
    for the next page."""
    query = build(AgentEventListQuery, agent_id=agent_id, kind=kind, limit=limit, cursor=cursor)
    return await page_call(
        ctx, ledger.list_events, agent_event_out, ledger=ledger_name, query=query, read_only=False
    )


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def agent_reflection_list(
    ledger_name: LedgerArg,
    ctx: Context,
    agent_id: Name | None = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
) -> JsonObject:
    """The reflections posted in a ledger newest first, optionally of one agent, each with
    the events it is based on. Pass next_cursor back as cursor for the next page."""

    async def work(session: AsyncSession, caller: Caller) -> Page[ReflectionOut]:
        return page_out(
            await ledger.list_reflections(
                session,
                tenant_id=caller.tenant_id,
                ledger=ledger_name,
                agent_id=agent_id,
                limit=limit,
                cursor=cursor,
            ),
            reflection_out,
        )

    return await call(ctx, work)
