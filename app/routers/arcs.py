"""/v1/arcs: narrative arcs, stories of related events: create, append events, close, search."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from app.core.errors import problem_responses
from app.deps import (
    EmbedderDep,
    QuerySessionDep,
    ReadSessionDep,
    SearcherDep,
    SessionDep,
    SettingsDep,
    TenantDep,
)
from app.responses.arcs import arc_out, arc_search_out
from app.responses.pages import page_out
from app.routers.created import locate
from app.routers.params import ArcFilterQuery
from app.schemas.arcs import (
    ArcClose,
    ArcCreate,
    ArcEventCreate,
    ArcListQuery,
    ArcOut,
    ArcSearchRequest,
    ArcSearchResponse,
    ArcUpdate,
)
from app.schemas.common import Page
from app.services import arcs

router = APIRouter(prefix="/v1/arcs", tags=["arcs"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ArcOut,
    responses=problem_responses(422),
    summary="Create an arc",
)
async def create_arc(
    body: ArcCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> ArcOut:
    """Start an arc. `arc_type` is one of `arcs.types` (by default project_phase,
    decision_sequence, interaction_arc, incident, learning_journey, campaign, grant_process);
    entities and key-event memories must be the tenant's (422 naming the field)."""
    row = await arcs.create_arc(
        session, tenant_id=tenant_id, embedder=embedder, arcs=settings.arcs, data=body
    )
    locate(request, response, f"/v1/arcs/{row.id}")
    return arc_out(row)


@router.get("", response_model=Page[ArcOut], responses=problem_responses(422), summary="List arcs")
async def list_arcs(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[ArcListQuery, Query()],
    memory_filter: ArcFilterQuery = None,
) -> Page[ArcOut]:
    """Arcs newest first; `filter` keeps those it admits."""
    return page_out(
        await arcs.list_arcs(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        arc_out,
    )


@router.post(
    "/search",
    response_model=ArcSearchResponse,
    responses=problem_responses(422),
    summary="Search arcs",
)
async def search_arcs(
    body: ArcSearchRequest,
    session: QuerySessionDep,
    searcher: SearcherDep,
) -> ArcSearchResponse:
    """Find arcs by title, summary, outcome and lessons: in `hybrid` mode the semantic and
    keyword lists are fused by the configured `[retrieval] fusion`, like procedure search."""
    hits = await arcs.search_arcs(session, searcher=searcher, request=body)
    return arc_search_out(body.mode, hits)


@router.get(
    "/{arc_id}", response_model=ArcOut, responses=problem_responses(404, 422), summary="Get an arc"
)
async def get_arc(arc_id: uuid.UUID, session: ReadSessionDep, tenant_id: TenantDep) -> ArcOut:
    """One arc with its key events."""
    return arc_out(await arcs.get_arc(session, tenant_id=tenant_id, arc_id=arc_id))


@router.patch(
    "/{arc_id}",
    response_model=ArcOut,
    responses=problem_responses(404, 409, 422),
    summary="Update an open arc",
)
async def update_arc(
    arc_id: uuid.UUID,
    body: ArcUpdate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> ArcOut:
    """Change an open arc: title, summary, type, entities, `started_at`, or `status` between
    draft and active (a proposed draft is accepted with `{"status": "active"}`). A closed arc
    is a 409; closing goes through `/close`."""
    return arc_out(
        await arcs.update_arc(
            session,
            tenant_id=tenant_id,
            embedder=embedder,
            arcs=settings.arcs,
            arc_id=arc_id,
            data=body,
        )
    )


@router.post(
    "/{arc_id}/events",
    response_model=ArcOut,
    responses=problem_responses(404, 409, 422),
    summary="Append a key event",
)
async def append_arc_event(
    arc_id: uuid.UUID, body: ArcEventCreate, session: SessionDep, tenant_id: TenantDep
) -> ArcOut:
    """Append a memory of the tenant as a key event; 409 once the arc is closed."""
    return arc_out(await arcs.append_event(session, tenant_id=tenant_id, arc_id=arc_id, data=body))


@router.post(
    "/{arc_id}/close",
    response_model=ArcOut,
    responses=problem_responses(404, 409, 422),
    summary="Close an arc",
)
async def close_arc(
    arc_id: uuid.UUID,
    body: ArcClose,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> ArcOut:
    """End the arc (completed or abandoned) with its outcome and lessons; 409 when it is
    already closed."""
    return arc_out(
        await arcs.close_arc(
            session, tenant_id=tenant_id, embedder=embedder, arc_id=arc_id, data=body
        )
    )
