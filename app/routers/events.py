"""/v1/events: the tenant's audit stream, who changed what and when."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query

from app.core.errors import problem_responses
from app.deps import ReadSessionDep, TenantDep
from app.responses.events import event_out
from app.responses.pages import page_out
from app.routers.params import Cursor, IsoTime, Limit, Text
from app.schemas.common import Page
from app.schemas.events import EventOut
from app.services import events

router = APIRouter(prefix="/v1/events", tags=["data rights"])


@router.get(
    "", response_model=Page[EventOut], responses=problem_responses(422), summary="List audit events"
)
async def list_events(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    memory_id: Annotated[
        uuid.UUID | None,
        Query(description="Events of this memory, and the deletion tombstones that list it."),
    ] = None,
    event_type: Text = None,
    since: Annotated[
        IsoTime | None,
        Query(description="Events at or after this time (ISO 8601 with a time zone)."),
    ] = None,
    until: Annotated[
        IsoTime | None, Query(description="Events before this time (ISO 8601 with a time zone).")
    ] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Page[EventOut]:
    """The tenant's events newest first: each names the key that caused it (`actor_key_id`)."""
    return page_out(
        await events.list_events(
            session,
            tenant_id=tenant_id,
            memory_id=memory_id,
            event_type=event_type,
            since=since,
            until=until,
            limit=limit,
            cursor=cursor,
        ),
        event_out,
    )
