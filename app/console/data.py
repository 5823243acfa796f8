"""/ui/data: the tenant's export as a download, and its audit events filtered by type and
memory."""

import uuid

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse

from app.console.auth import ConsoleDep, DbDep
from app.console.render import ConsoleRoute, page
from app.core.errors import InvalidInput
from app.responses.events import event_out
from app.services import events, export_snapshot
from app.services.portability import NDJSON

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
LISTED = 100


@router.get("/data")
async def data_page(request: Request, console: ConsoleDep, db: DbDep) -> Response:
    """The export link and the newest audit events, filtered by type and memory id."""
    params = request.query_params
    event_type = params.get("event_type", "").strip() or None
    memory_id = None
    if raw := params.get("memory_id", "").strip():
        try:
            memory_id = uuid.UUID(raw)
        except ValueError:
            raise InvalidInput("memory id must be a UUID", field="memory_id") from None
    rows, _ = await events.list_events(
        db,
        tenant_id=console.tenant_id,
        memory_id=memory_id,
        event_type=event_type,
        since=None,
        until=None,
        limit=LISTED,
        cursor=None,
    )
    return page(request, "data.html", events=[event_out(row) for row in rows], params=params)


@router.get("/data/export")
async def export(request: Request, console: ConsoleDep) -> StreamingResponse:
    """Every record of the tenant as JSON Lines (as GET /v1/export, with its limits), as a
    file download."""
    state = request.app.state
    snapshot = await export_snapshot.export_snapshot(
        state.sessionmaker,
        tenant_id=console.tenant_id,
        settings=state.settings.export,
        slots=state.export_slots,
    )
    return StreamingResponse(
        snapshot.chunks(),
        media_type=NDJSON,
        headers={
            "Content-Disposition": f'attachment; filename="engram-{console.tenant_id}.jsonl"',
            "Content-Length": str(snapshot.size),
        },
    )
