"""Who wrote a record: the butlers of the API keys whose writes the event log names."""

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from sqlalchemy import literal_column, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import MemoryEvent
from app.models.api_keys import ApiKey

# Spelled out, not bound: the expression index (tenant_id, payload ->> 'memory_id') serves it.
IdField = Literal["memory_id", "event_id"]


async def writers_butlers(
    session: AsyncSession,
    *,
    tenant_id: str,
    event_type: str,
    id_field: IdField,
    ids: Sequence[uuid.UUID],
    since: datetime,
) -> list[list[str]]:
    """The butlers of each key limited to butlers that wrote one of `ids`, as the events of
    `event_type` (naming the record in `payload[id_field]`, written at `since` or later) say.

    Empty when only unlimited keys, jobs of theirs or no key wrote them.
    """
    if not ids:
        return []
    named = MemoryEvent.payload.op("->>")(literal_column(f"'{id_field}'"))
    stmt = (
        select(ApiKey.butlers)
        .distinct()
        .join(MemoryEvent, MemoryEvent.actor_key_id == ApiKey.id)
        .where(
            MemoryEvent.tenant_id == tenant_id,
            MemoryEvent.event_type == event_type,
            MemoryEvent.created_at >= since,
            named.in_([str(i) for i in ids]),
            ApiKey.butlers.is_not(None),
        )
    )
    return [list(butlers or ()) for butlers in (await session.execute(stmt)).scalars()]
