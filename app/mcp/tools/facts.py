"""Fact tools: store a fact, report evidence against one, list facts and a fact's history."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import (
    ContentArg,
    CursorArg,
    EntityIdArg,
    FactIdArg,
    FilterArg,
    ImportanceArg,
    PageLimitArg,
    PredicateArg,
    ReasonArg,
    ScopeArg,
    SubjectArg,
    TagsArg,
    ValidFromArg,
    ValidUntilArg,
    filter_of,
)
from app.mcp.calls import Caller, JsonObject, build, call, read_call
from app.mcp.groups import CORE
from app.mcp.toolset import ToolSet
from app.responses.facts import fact_out, fact_page_out
from app.schemas.common import AwareDatetimeIn, Name, Permanence, ResponseModel, Validity
from app.schemas.facts import FactContradiction, FactCreate, FactListQuery, FactOut, FactPage
from app.services import fact_beliefs, facts

PermanenceArg = Annotated[Permanence, Field(description="How slowly its confidence decays.")]
AnchorArg = Annotated[uuid.UUID | None, Field(description="The entity it is about (its id).")]
ValidityArg = Annotated[
    Validity | None,
    Field(
        description="active (the default), superseded, expired or retracted; at a point in time: "
        "any."
    ),
]
AsOfTimeArg = Annotated[
    AwareDatetimeIn | None,
    Field(description="An ISO 8601 time with a zone: the fact versions that held then."),
]
KnownAtTimeArg = Annotated[
    AwareDatetimeIn | None,
    Field(description="An ISO 8601 time with a zone: facts as the memory believed them then."),
]


class FactHistory(ResponseModel):
    """Every version of a fact's key, the latest valid period first."""

    versions: list[FactOut]


tools = ToolSet("memories")


@tools.add(group=CORE)
async def memory_store_fact(
    subject: SubjectArg,
    predicate: PredicateArg,
    content: ContentArg,
    ctx: Context,
    importance: ImportanceArg = 5.0,
    permanence: PermanenceArg = "standard",
    scope: ScopeArg = "global",
    tags: TagsArg = None,
    entity_id: AnchorArg = None,
    valid_from: ValidFromArg = None,
    valid_until: ValidUntilArg = None,
) -> JsonObject:
    """Remember a durable fact as subject / predicate / content, e.g. ('Ann', 'favourite
    colour', 'green'). A fact with the same subject and predicate in the same scope supersedes
    the old one, so store a correction the same way."""
    data = build(
        FactCreate,
        subject=subject,
        predicate=predicate,
        content=content,
        importance=importance,
        permanence=permanence,
        scope=scope,
        tags=tags,
        entity_id=entity_id,
        valid_from=valid_from,
        valid_until=valid_until,
    )

    async def work(session: AsyncSession, caller: Caller) -> FactOut:
        stored = await facts.store_fact(
            session,
            tenant_id=caller.tenant_id,
            embedder=caller.embedder,
            data=data,
            auto_links=caller.settings.auto_links,
        )
        return fact_out(stored.fact)

    return await call(ctx, work)


@tools.add(group=CORE)
async def memory_contradict(
    fact_id: FactIdArg, ctx: Context, reasoning: ReasonArg = None
) -> JsonObject:
    """Report evidence, with why, that an active fact no longer holds; its confidence halves.
    When you know what is true now, store that fact instead."""
    data = build(FactContradiction, reasoning=reasoning)

    async def work(session: AsyncSession, caller: Caller) -> FactOut:
        return fact_out(
            await fact_beliefs.contradict(
                session, tenant_id=caller.tenant_id, fact_id=fact_id, reasoning=data.reasoning
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_list_facts(
    ctx: Context,
    subject: Name | None = None,
    predicate: Name | None = None,
    scope: Name | None = None,
    validity: ValidityArg = None,
    entity_id: EntityIdArg | None = None,
    as_of: AsOfTimeArg = None,
    known_at: KnownAtTimeArg = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: FilterArg = None,
) -> JsonObject:
    """List facts newest first by exact subject, predicate, scope or entity_id, e.g. everything
    stored about 'Ann'. To find facts by meaning, use memory_search."""
    query = build(
        FactListQuery,
        subject=subject,
        predicate=predicate,
        scope=scope,
        validity=validity,
        entity_id=entity_id,
        as_of=as_of,
        known_at=known_at,
        limit=limit,
        cursor=cursor,
    )
    memory_filter = filter_of(filter)

    async def work(session: AsyncSession, caller: Caller) -> FactPage:
        return fact_page_out(
            await facts.list_facts(
                session, tenant_id=caller.tenant_id, query=query, memory_filter=memory_filter
            )
        )

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_fact_history(fact_id: FactIdArg, ctx: Context) -> JsonObject:
    """Every version of a fact's subject and predicate, the latest first, with when each held
    and when it was recorded."""

    async def work(session: AsyncSession, caller: Caller) -> FactHistory:
        chain = await facts.fact_history_chain(session, tenant_id=caller.tenant_id, fact_id=fact_id)
        return FactHistory(versions=[fact_out(item) for item in chain])

    return await read_call(ctx, work)
