"""/v1/export and /v1/import: a tenant's records out and back in, as JSON Lines."""

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from app.core.errors import problem_responses
from app.deps import (
    EmbedderDep,
    ExportSlotsDep,
    SessionDep,
    SessionmakerDep,
    SettingsDep,
    TenantDep,
)
from app.responses.data_rights import import_out
from app.schemas.portability import ImportOut
from app.services import export_snapshot, portability
from app.services.portability import NDJSON

router = APIRouter(prefix="/v1", tags=["data rights"])

_RECORDS = (
    "One JSON object per line with a `kind`: `entity`, `episode`, `fact` (every "
    "version: `supersedes_id` and `validity` tell the history), `rule` (with its "
    "counters), `rule_application`, `run`, `run_message`, `run_feedback`, "
    "`agent_event` (its own kind in `event_kind`; a reflection is one), "
    "`reflection_consolidation`, `procedure` (every version), `arc`, `working_memory`, "
    "`link`; the other fields are the stored columns. Embeddings are not exported: "
    "import embeds the content again. Messages and ledger events are exported in "
    "append order without their `position`: import appends them in that order."
)


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {"content": {NDJSON: {"schema": {"type": "string"}}}, "description": _RECORDS},
        **problem_responses(422, 503),
    },
    summary="Export the tenant's records (JSON Lines)",
)
async def export(
    tenant_id: TenantDep,
    sessionmaker: SessionmakerDep,
    settings: SettingsDep,
    slots: ExportSlotsDep,
) -> StreamingResponse:
    """Stream every record of the tenant (memories, entities, runs, ledgers, procedures,
    arcs, working memories, links), oldest first within each kind, from one consistent
    snapshot. The snapshot is read whole before the first byte is sent, so a slow reader
    holds no database connection. A tenant may have `export.max_per_tenant` (2) exports
    under way at once: past it a 429 with Retry-After; a snapshot that takes longer than
    `export.snapshot_seconds` (300) to read is a 503 with Retry-After."""
    snapshot = await export_snapshot.export_snapshot(
        sessionmaker, tenant_id=tenant_id, settings=settings.export, slots=slots
    )
    return StreamingResponse(
        snapshot.chunks(), media_type=NDJSON, headers={"Content-Length": str(snapshot.size)}
    )


@router.post(
    "/import",
    response_model=ImportOut,
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": _RECORDS,
            "content": {NDJSON: {"schema": {"type": "string"}}},
        }
    },
    responses=problem_responses(409, 413, 422),
    summary="Import records of an export (JSON Lines)",
)
async def import_records(
    request: Request,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> ImportOut:
    """Insert the records in one transaction (all or none), keeping their ids, times
    (created_at, occurred_at, last_confirmed_at, ...) and counters. A line whose `tenant_id`
    is not the caller's is a 422 naming the line and the field, and so is a malformed line; a
    record pointing at another tenant's rows is a 422, and so is a body without records; an
    id that already exists is a 409. Embeddings and the keyword index are made anew; an
    episode of a session is read after the imported turns before it, as when it was stored.
    Import into a tenant whose copies are gone (after an erasure), or into another
    database. A body holds at most `max_import_records` (100,000) records: more is a 422."""
    counts = await portability.import_lines(
        session,
        embedder=embedder,
        tenant_id=tenant_id,
        body=await request.body(),
        max_records=settings.max_import_records,
        keyword_context=settings.keyword_context,
    )
    return import_out(counts)
