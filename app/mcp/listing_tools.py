"""Listing tools: page through episodes, facts and rules by their fields, and a fact's
history, as GET /v1/episodes, /v1/facts and /v1/rules do."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.formulas.fact_time import point_in_time
from app.mcp.args import CursorArg, EntityIdArg, FilterArg, PageLimitArg, filter_of
from app.mcp.calls import Caller, JsonObject, read_call
from app.mcp.toolset import ToolSet
from app.responses.episodes import episode_out
from app.responses.facts import fact_out, fact_page_out
from app.responses.pages import page_out
from app.responses.rules import rule_out
from app.schemas.common import (
    AwareDatetimeIn,
    ConsolidationStatus,
    MaturityLevel,
    Name,
    Page,
    ResponseModel,
    SessionIdIn,
    Validity,
)
from app.schemas.episodes import EpisodeOut
from app.schemas.facts import FactOut, FactPage
from app.schemas.rules import RuleOut
from app.services import episodes, facts, rules

FactIdArg = Annotated[uuid.UUID, Field(description="The fact's id (a UUID).")]
ValidityArg = Annotated[Validity | None, Field(
    description="active (the default), superseded, expired or retracted; at a point in time: "
                "any.")]
AsOfTimeArg = Annotated[AwareDatetimeIn | None, Field(
    description="An ISO 8601 time with a zone: the fact versions that held then.")]
KnownAtTimeArg = Annotated[AwareDatetimeIn | None, Field(
    description="An ISO 8601 time with a zone: facts as the memory believed them then.")]


class FactHistory(ResponseModel):
    """Every version of a fact's key, the latest valid period first."""

    versions: list[FactOut]


tools = ToolSet()


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def episode_list(ctx: Context, butler: Name | None = None,
                       session_id: SessionIdIn | None = None,
                       consolidation_status: ConsolidationStatus | None = None,
                       include_expired: bool = False, limit: PageLimitArg = 50,
                       cursor: CursorArg = None, filter: FilterArg = None) -> JsonObject:
    """List episodes newest first, e.g. every turn of one session_id (or inferred_session)
    or of one butler, or those still pending consolidation; filter keeps those it admits, e.g.
    {"metadata.topic": "travel"}. Use memory_search to find episodes by meaning. Pass
    next_cursor back as cursor for the next page."""
    memory_filter = filter_of(filter)

    async def work(session: AsyncSession, caller: Caller) -> Page[EpisodeOut]:
        return page_out(await episodes.list_episodes(
            session, tenant_id=caller.tenant_id, butler=butler, session_id=session_id,
            consolidation_status=consolidation_status, consolidated=None,
            include_expired=include_expired, limit=limit, cursor=cursor,
            memory_filter=memory_filter), episode_out)

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def fact_list(ctx: Context, subject: Name | None = None, predicate: Name | None = None,
                    scope: Name | None = None, validity: ValidityArg = None,
                    entity_id: EntityIdArg | None = None, as_of: AsOfTimeArg = None,
                    known_at: KnownAtTimeArg = None, limit: PageLimitArg = 50,
                    cursor: CursorArg = None, filter: FilterArg = None) -> JsonObject:
    """List facts newest first by exact subject, predicate, scope or entity_id, e.g.
    everything stored about 'Ann'; with as_of / known_at, the versions that held then, as
    believed then; filter keeps those it admits, e.g. {"tags": "work"}. Use memory_search to
    find facts by meaning. Pass next_cursor back as cursor for the next page."""
    memory_filter = filter_of(filter)

    async def work(session: AsyncSession, caller: Caller) -> FactPage:
        return fact_page_out(await facts.list_facts(
            session, tenant_id=caller.tenant_id, subject=subject, predicate=predicate,
            scope=scope, validity=validity, entity_id=entity_id,
            at=point_in_time(as_of, known_at), limit=limit, cursor=cursor,
            memory_filter=memory_filter))

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def fact_history(fact_id: FactIdArg, ctx: Context) -> JsonObject:
    """How a fact changed: every version of its subject and predicate linked by
    supersession, the latest valid period first, each with when it held (valid_from,
    valid_until) and when it was recorded and replaced (recorded_at, recorded_until)."""

    async def work(session: AsyncSession, caller: Caller) -> FactHistory:
        chain = await facts.fact_history_chain(session, tenant_id=caller.tenant_id,
                                               fact_id=fact_id)
        return FactHistory(versions=[fact_out(item) for item in chain])

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def rule_list(ctx: Context, scope: Name | None = None,
                    maturity: MaturityLevel | None = None, include_forgotten: bool = False,
                    limit: PageLimitArg = 50, cursor: CursorArg = None,
                    filter: FilterArg = None) -> JsonObject:
    """List rules newest first, optionally of one scope or maturity (candidate,
    established, proven, anti_pattern), e.g. to review the proven ones; filter keeps those
    it admits. Use memory_recall for the rules that matter to a task. Pass next_cursor back
    as cursor for the next page."""
    memory_filter = filter_of(filter)

    async def work(session: AsyncSession, caller: Caller) -> Page[RuleOut]:
        return page_out(await rules.list_rules(
            session, tenant_id=caller.tenant_id, scope=scope, maturity=maturity,
            include_forgotten=include_forgotten, limit=limit, cursor=cursor,
            memory_filter=memory_filter), rule_out)

    return await read_call(ctx, work)
