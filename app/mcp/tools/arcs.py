"""Arc tools: narrative arcs (stories of related events) created, extended, closed and
searched, as /v1/arcs offers them, and drafts proposed from episodes by a job."""

import uuid
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.constants import SearchMode
from app.mcp.args import (
    ArcFilterArg,
    CursorArg,
    MemoryIdArg,
    MemoryTypeArg,
    PageLimitArg,
    QueryArg,
    filter_of,
)
from app.mcp.calls import Caller, JsonObject, build, call, page_call, read_call
from app.mcp.toolset import ToolSet
from app.responses.arcs import arc_out, arc_search_out
from app.responses.jobs import job_out
from app.schemas.arcs import (
    MAX_KEY_EVENTS,
    MAX_LESSONS,
    ArcBoundaryJobCreate,
    ArcClose,
    ArcCreate,
    ArcEventCreate,
    ArcListQuery,
    ArcOut,
    ArcSearchRequest,
    ArcSearchResponse,
    ArcStatus,
    ArcUpdate,
    ClosedStatus,
    EventText,
    Summary,
)
from app.schemas.common import Content, Name
from app.schemas.jobs import JobOut
from app.services import arcs, jobs

ArcIdArg = Annotated[uuid.UUID, Field(description="The arc's id (a UUID).")]
ArcTypeArg = Annotated[
    Name,
    Field(
        description="One of the configured arc types (by default project_phase, "
        "decision_sequence, interaction_arc, incident, learning_journey, campaign, "
        "grant_process)."
    ),
]
EntityIdsArg = Annotated[
    list[uuid.UUID] | None,
    Field(max_length=100, description="Entities the arc is about (up to 100)."),
]
TimeArg = Annotated[
    str | None, Field(max_length=64, description="An ISO 8601 time with a zone; default: now.")
]
KeyEventsArg = Annotated[
    list[dict[str, Any]] | None,
    Field(
        max_length=MAX_KEY_EVENTS,
        description="Memories that mark its steps, each {memory_type: episode|fact|rule, "
        "memory_id, description?, occurred_at?}.",
    ),
]


tools = ToolSet("arcs")


def _ids(values: list[uuid.UUID] | None) -> list[str] | None:
    return None if values is None else [str(value) for value in values]


@tools.add()
async def arc_create(
    title: Name,
    arc_type: ArcTypeArg,
    ctx: Context,
    scope: Name = "global",
    summary: Summary | None = None,
    entity_ids: EntityIdsArg = None,
    started_at: TimeArg = None,
    key_events: KeyEventsArg = None,
    status: Literal["draft", "active"] = "active",
) -> JsonObject:
    """Start a narrative arc, a story of related events (a project phase, an incident), to
    extend with arc_add_event and end with arc_close."""
    data = build(
        ArcCreate,
        title=title,
        arc_type=arc_type,
        scope=scope,
        summary=summary,
        entity_ids=_ids(entity_ids),
        started_at=started_at,
        key_events=key_events,
        status=status,
    )

    async def work(session: AsyncSession, caller: Caller) -> ArcOut:
        return arc_out(
            await arcs.create_arc(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                arcs=caller.settings.arcs,
                data=data,
            )
        )

    return await call(ctx, work)


@tools.add()
async def arc_add_event(
    arc_id: ArcIdArg,
    memory_type: MemoryTypeArg,
    memory_id: MemoryIdArg,
    ctx: Context,
    description: EventText | None = None,
    occurred_at: TimeArg = None,
) -> JsonObject:
    """Append a memory (episode, fact or rule) to an open arc as its next key event, with
    what happened and when. A closed arc takes no more events."""
    data = build(
        ArcEventCreate,
        memory_type=memory_type,
        memory_id=memory_id,
        description=description,
        occurred_at=occurred_at,
    )

    async def work(session: AsyncSession, caller: Caller) -> ArcOut:
        return arc_out(
            await arcs.append_event(session, tenant_id=caller.tenant_id, arc_id=arc_id, data=data)
        )

    return await call(ctx, work)


@tools.add()
async def arc_update(
    arc_id: ArcIdArg,
    ctx: Context,
    title: Name | None = None,
    summary: Summary | None = None,
    arc_type: ArcTypeArg | None = None,
    entity_ids: EntityIdsArg = None,
    started_at: TimeArg = None,
    status: Literal["draft", "active"] | None = None,
) -> JsonObject:
    """Change an open arc's title, summary, type, entities or start, or accept a proposed
    draft arc with status active. Arguments left out stay as they are; a closed arc cannot
    change."""
    data = build(
        ArcUpdate,
        title=title,
        summary=summary,
        arc_type=arc_type,
        entity_ids=_ids(entity_ids),
        started_at=started_at,
        status=status,
    )

    async def work(session: AsyncSession, caller: Caller) -> ArcOut:
        return arc_out(
            await arcs.update_arc(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                arcs=caller.settings.arcs,
                arc_id=arc_id,
                data=data,
            )
        )

    return await call(ctx, work)


@tools.add()
async def arc_close(
    arc_id: ArcIdArg,
    outcome: Content,
    ctx: Context,
    lessons: Annotated[
        list[Content] | None,
        Field(max_length=MAX_LESSONS, description="What was learned (up to 50)."),
    ] = None,
    status: ClosedStatus = "completed",
    ended_at: TimeArg = None,
) -> JsonObject:
    """End an arc as completed or abandoned, with its outcome and the lessons learned; later
    arc_search finds it by them."""
    data = build(ArcClose, outcome=outcome, lessons=lessons, status=status, ended_at=ended_at)

    async def work(session: AsyncSession, caller: Caller) -> ArcOut:
        return arc_out(
            await arcs.close_arc(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                arc_id=arc_id,
                data=data,
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def arc_get(arc_id: ArcIdArg, ctx: Context) -> JsonObject:
    """Read one arc with its key events, status, outcome and lessons."""

    async def work(session: AsyncSession, caller: Caller) -> ArcOut:
        return arc_out(await arcs.get_arc(session, tenant_id=caller.tenant_id, arc_id=arc_id))

    return await read_call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def arc_list(
    ctx: Context,
    scope: Name | None = None,
    arc_type: Name | None = None,
    status: ArcStatus | None = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: ArcFilterArg = None,
) -> JsonObject:
    """List arcs newest first, optionally of one scope, type or status (draft: proposals waiting
    to be accepted)."""
    query = build(
        ArcListQuery, scope=scope, arc_type=arc_type, status=status, limit=limit, cursor=cursor
    )
    return await page_call(
        ctx, arcs.list_arcs, arc_out, query=query, memory_filter=filter_of(filter, "arc")
    )


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def arc_search(
    query: QueryArg,
    ctx: Context,
    scope: Name | None = None,
    arc_type: Name | None = None,
    status: ArcStatus | None = None,
    mode: SearchMode = "hybrid",
    limit: int = 10,
) -> JsonObject:
    """Find arcs by meaning and words in their title, summary, outcome and lessons, e.g.
    how a similar incident went before; limit 1-100."""
    request = build(
        ArcSearchRequest,
        query=query,
        scope=scope,
        arc_type=arc_type,
        status=status,
        mode=mode,
        limit=limit,
    )

    async def work(session: AsyncSession, caller: Caller) -> ArcSearchResponse:
        hits = await arcs.search_arcs(
            session,
            searcher=caller.searcher,
            request=request,
        )
        return arc_search_out(request.mode, hits)

    return await read_call(ctx, work)


@tools.add()
async def arc_propose(
    scope: Annotated[Name, Field(description="The butler whose episodes are clustered.")],
    ctx: Context,
    gap_minutes: float | None = None,
) -> JsonObject:
    """Queue a job that proposes draft arcs from a butler's episodes, cutting at gaps of more
    than gap_minutes. Accept one with arc_update status=active."""
    params = build(ArcBoundaryJobCreate, scope=scope, gap_minutes=gap_minutes).model_dump(
        exclude_none=True
    )

    async def work(session: AsyncSession, caller: Caller) -> JobOut:
        return job_out(
            await jobs.enqueue(
                session, tenant_id=caller.tenant_id, kind="arc_boundaries", params=params
            )
        )

    return await call(ctx, work)
