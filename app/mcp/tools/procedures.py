"""Procedure tools: learned multi-step workflows, their versions, outcomes and search, as
/v1/procedures offers them."""

import uuid
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.constants import SearchMode
from app.mcp.args import CursorArg, PageLimitArg, ProcedureFilterArg, QueryArg, filter_of
from app.mcp.calls import Caller, JsonObject, build, call, page_call, read_call
from app.mcp.toolset import ToolSet
from app.responses.procedures import procedure_out, procedure_search_out
from app.schemas.common import Name, ResponseModel
from app.schemas.procedures import (
    MAX_SOURCES,
    MAX_STEPS,
    Description,
    ExecutionCreate,
    NewProcedureStatus,
    ProcedureCreate,
    ProcedureListQuery,
    ProcedureOut,
    ProcedureSearchRequest,
    ProcedureSearchResponse,
    ProcedureStatus,
    ProcedureUpdate,
    ProcedureVersionCreate,
)
from app.services import procedures

ProcedureIdArg = Annotated[uuid.UUID, Field(description="The procedure's id (a UUID).")]
StepsArg = Annotated[
    list[dict[str, Any]],
    Field(
        min_length=1,
        max_length=MAX_STEPS,
        description="The steps in order, each {step: 1, 2, 3, ..., action, params_template?, "
        "conditions?} (up to 100).",
    ),
]
LearnedFromArg = Annotated[
    list[dict[str, Any]] | None,
    Field(
        max_length=MAX_SOURCES,
        description="Memories it was learned from, each {memory_type: episode|fact|rule, "
        "memory_id}; each gets a derived_from link from the procedure.",
    ),
]
ConditionsArg = Annotated[dict[str, Any] | None, Field(description="A JSON object.")]
AgentArg = Annotated[Name, Field(description="The agent that owns the procedure.")]


class ProcedureVersions(ResponseModel):
    """Every version of a procedure's chain, version 1 first."""

    versions: list[ProcedureOut]


tools = ToolSet("procedures")


@tools.add()
async def procedure_store(
    agent_id: AgentArg,
    name: Name,
    steps: StepsArg,
    ctx: Context,
    description: Description | None = None,
    preconditions: ConditionsArg = None,
    postconditions: ConditionsArg = None,
    learned_from: LearnedFromArg = None,
    status: NewProcedureStatus | None = None,
) -> JsonObject:
    """Remember a named multi-step workflow of an agent, with when it applies and what holds
    afterwards. To change one, use procedure_new_version."""
    data = build(
        ProcedureCreate,
        agent_id=agent_id,
        name=name,
        description=description,
        steps=steps,
        preconditions=preconditions,
        postconditions=postconditions,
        learned_from=learned_from,
        status=status,
    )

    async def work(session: AsyncSession, caller: Caller) -> ProcedureOut:
        return procedure_out(
            await procedures.create_procedure(
                session, tenant_id=caller.tenant_id, embedder=caller.embedder, data=data
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def procedure_search(
    query: QueryArg,
    ctx: Context,
    agent_id: Name | None = None,
    status: ProcedureStatus | None = None,
    include_superseded: bool = False,
    mode: SearchMode = "hybrid",
    limit: int = 10,
) -> JsonObject:
    """Find procedures for a task by meaning and words (name, description, step actions),
    best first with their success rates. Ask before doing a multi-step task the agent may
    have done before; limit 1-100."""
    request = build(
        ProcedureSearchRequest,
        query=query,
        agent_id=agent_id,
        status=status,
        include_superseded=include_superseded,
        mode=mode,
        limit=limit,
    )

    async def work(session: AsyncSession, caller: Caller) -> ProcedureSearchResponse:
        hits = await procedures.search_procedures(
            session,
            searcher=caller.searcher,
            request=request,
        )
        return procedure_search_out(request.mode, hits)

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def procedure_get(procedure_id: ProcedureIdArg, ctx: Context) -> JsonObject:
    """Read one procedure version: its steps, conditions, status and execution statistics
    (execution_count, success_rate, avg_duration_ms); superseded_by names a newer version."""

    async def work(session: AsyncSession, caller: Caller) -> ProcedureOut:
        return procedure_out(
            await procedures.get_procedure(
                session, tenant_id=caller.tenant_id, procedure_id=procedure_id
            )
        )

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def procedure_list(
    ctx: Context,
    agent_id: Name | None = None,
    name: Name | None = None,
    status: ProcedureStatus | None = None,
    include_superseded: bool = False,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: ProcedureFilterArg = None,
) -> JsonObject:
    """List procedures newest first, optionally of one agent, name or status (current versions
    unless include_superseded)."""
    query = build(
        ProcedureListQuery,
        agent_id=agent_id,
        name=name,
        status=status,
        include_superseded=include_superseded,
        limit=limit,
        cursor=cursor,
    )
    return await page_call(
        ctx,
        procedures.list_procedures,
        procedure_out,
        query=query,
        memory_filter=filter_of(filter, "procedure"),
    )


@tools.add()
async def procedure_record_execution(
    procedure_id: ProcedureIdArg, success: bool, ctx: Context, duration_ms: int | None = None
) -> JsonObject:
    """Report the outcome of following a procedure: success true or false and, if timed,
    duration_ms (up to 30 days). It updates the procedure's success rate, which search
    shows. Only the current version counts executions."""
    request = build(ExecutionCreate, success=success, duration_ms=duration_ms)

    async def work(session: AsyncSession, caller: Caller) -> ProcedureOut:
        return procedure_out(
            await procedures.record_execution(
                session,
                tenant_id=caller.tenant_id,
                procedure_id=procedure_id,
                success=request.success,
                duration_ms=request.duration_ms,
            )
        )

    return await call(ctx, work)


@tools.add()
async def procedure_set_status(
    procedure_id: ProcedureIdArg, status: ProcedureStatus, ctx: Context
) -> JsonObject:
    """Change a procedure's status: draft, active (ready to follow) or deprecated (no longer
    to be used). A superseded version stays deprecated."""
    request = build(ProcedureUpdate, status=status)

    async def work(session: AsyncSession, caller: Caller) -> ProcedureOut:
        return procedure_out(
            await procedures.set_status(
                session,
                tenant_id=caller.tenant_id,
                procedure_id=procedure_id,
                status=request.status,
            )
        )

    return await call(ctx, work)


@tools.add()
async def procedure_new_version(
    procedure_id: ProcedureIdArg,
    steps: StepsArg,
    ctx: Context,
    description: Description | None = None,
    preconditions: ConditionsArg = None,
    postconditions: ConditionsArg = None,
    learned_from: LearnedFromArg = None,
    status: NewProcedureStatus | None = None,
) -> JsonObject:
    """Store a procedure's next version (new steps, fresh counters; fields left out kept) and
    deprecate the old one, atomically."""
    data = build(
        ProcedureVersionCreate,
        description=description,
        steps=steps,
        preconditions=preconditions,
        postconditions=postconditions,
        learned_from=learned_from,
        status=status,
    )

    async def work(session: AsyncSession, caller: Caller) -> ProcedureOut:
        return procedure_out(
            await procedures.create_version(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                procedure_id=procedure_id,
                data=data,
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def procedure_versions(procedure_id: ProcedureIdArg, ctx: Context) -> JsonObject:
    """Every version of a procedure (any version's id will do), version 1 first, to see how
    it evolved and how each version fared."""

    async def work(session: AsyncSession, caller: Caller) -> ProcedureVersions:
        rows = await procedures.list_versions(
            session, tenant_id=caller.tenant_id, procedure_id=procedure_id
        )
        return ProcedureVersions(versions=[procedure_out(row) for row in rows])

    return await call(ctx, work)
