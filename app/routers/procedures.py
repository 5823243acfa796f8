"""/v1/procedures: learned multi-step workflows, their versions, executions and search."""

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
    TenantDep,
)
from app.responses.pages import page_out
from app.responses.procedures import procedure_out, procedure_search_out
from app.routers.created import locate
from app.routers.params import ProcedureFilterQuery
from app.schemas.common import Page
from app.schemas.procedures import (
    ExecutionCreate,
    ProcedureCreate,
    ProcedureListQuery,
    ProcedureOut,
    ProcedureSearchRequest,
    ProcedureSearchResponse,
    ProcedureUpdate,
    ProcedureVersionCreate,
)
from app.services import procedures

router = APIRouter(prefix="/v1/procedures", tags=["procedures"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=ProcedureOut,
    responses=problem_responses(409, 422),
    summary="Store a procedure",
)
async def create_procedure(
    body: ProcedureCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> ProcedureOut:
    """Store version 1 of a procedure (a draft unless `status` says active).

    The name is unique among the agent's current procedures (409 otherwise). Steps are
    numbered 1, 2, 3, ... in order. Each `learned_from` memory must be the tenant's (422
    naming it) and gets a `derived_from` link from the procedure.
    """
    row = await procedures.create_procedure(
        session, tenant_id=tenant_id, embedder=embedder, data=body
    )
    locate(request, response, f"/v1/procedures/{row.id}")
    return procedure_out(row)


@router.get(
    "",
    response_model=Page[ProcedureOut],
    responses=problem_responses(422),
    summary="List procedures",
)
async def list_procedures(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[ProcedureListQuery, Query()],
    memory_filter: ProcedureFilterQuery = None,
) -> Page[ProcedureOut]:
    """Procedures newest first; current versions only unless asked; `filter` keeps those it
    admits."""
    return page_out(
        await procedures.list_procedures(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        procedure_out,
    )


@router.post(
    "/search",
    response_model=ProcedureSearchResponse,
    responses=problem_responses(422),
    summary="Search procedures",
)
async def search_procedures(
    body: ProcedureSearchRequest,
    session: QuerySessionDep,
    searcher: SearcherDep,
) -> ProcedureSearchResponse:
    """Find procedures by meaning and by words (name, description and step actions).

    `hybrid` (default) fuses the semantic list (cosine similarity of the embeddings) and the
    keyword list (ts_rank_cd of the query's lexemes OR-ed) by the configured
    `[retrieval] fusion`: `rrf` (also what `learned` gives: procedures hold no sessions,
    whose signals the learned model reads): `rrf_score = 1/(k + semantic_rank) +
    1/(k + keyword_rank)` with the configured k (60), a procedure absent from one list
    counting as rank `limit + 1` there; or `weighted`. Current versions only unless
    `include_superseded`.
    """
    hits = await procedures.search_procedures(session, searcher=searcher, request=body)
    return procedure_search_out(body.mode, hits)


@router.get(
    "/{procedure_id}",
    response_model=ProcedureOut,
    responses=problem_responses(404, 422),
    summary="Get a procedure",
)
async def get_procedure(
    procedure_id: uuid.UUID, session: ReadSessionDep, tenant_id: TenantDep
) -> ProcedureOut:
    """One version of a procedure with its execution statistics."""
    return procedure_out(
        await procedures.get_procedure(session, tenant_id=tenant_id, procedure_id=procedure_id)
    )


@router.patch(
    "/{procedure_id}",
    response_model=ProcedureOut,
    responses=problem_responses(404, 409, 422),
    summary="Change a procedure's status",
)
async def update_procedure(
    procedure_id: uuid.UUID, body: ProcedureUpdate, session: SessionDep, tenant_id: TenantDep
) -> ProcedureOut:
    """Set `status` (draft, active, deprecated). A superseded version stays deprecated (409)."""
    row = await procedures.set_status(
        session, tenant_id=tenant_id, procedure_id=procedure_id, status=body.status
    )
    return procedure_out(row)


@router.post(
    "/{procedure_id}/executions",
    response_model=ProcedureOut,
    responses=problem_responses(404, 409, 422),
    summary="Record an execution",
)
async def record_execution(
    procedure_id: uuid.UUID, body: ExecutionCreate, session: SessionDep, tenant_id: TenantDep
) -> ProcedureOut:
    """Count one run: `execution_count` + 1, `success_count` + 1 on success, and the duration
    into `avg_duration_ms` when given. One atomic UPDATE, so concurrent reports never lose a
    count. A superseded (deprecated) version counts nothing: 409 naming the version and its
    successor."""
    row = await procedures.record_execution(
        session,
        tenant_id=tenant_id,
        procedure_id=procedure_id,
        success=body.success,
        duration_ms=body.duration_ms,
    )
    return procedure_out(row)


@router.post(
    "/{procedure_id}/versions",
    status_code=status.HTTP_201_CREATED,
    response_model=ProcedureOut,
    responses=problem_responses(404, 409, 422),
    summary="Supersede a procedure by a new version",
)
async def create_version(
    procedure_id: uuid.UUID,
    body: ProcedureVersionCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> ProcedureOut:
    """Store version + 1 of the procedure (same agent and name, fresh counters) and deprecate
    the old one, whose `superseded_by` then names the new one; in one transaction. Only the
    current version can be superseded (409 otherwise)."""
    row = await procedures.create_version(
        session, tenant_id=tenant_id, embedder=embedder, procedure_id=procedure_id, data=body
    )
    locate(request, response, f"/v1/procedures/{row.id}")
    return procedure_out(row)


@router.get(
    "/{procedure_id}/versions",
    response_model=list[ProcedureOut],
    responses=problem_responses(404, 422),
    summary="List a procedure's versions",
)
async def list_versions(
    procedure_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep
) -> list[ProcedureOut]:
    """Every version of the procedure's chain, version 1 first."""
    rows = await procedures.list_versions(session, tenant_id=tenant_id, procedure_id=procedure_id)
    return [procedure_out(row) for row in rows]
