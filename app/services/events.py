"""The one writer of the audit stream: every memory_events row goes through `record`.

The exceptions are the set-based sweeps (decay, cleanup): their SQL logs in the statement that
changes the rows, so a sweep of many rows stays one round trip.
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import InvalidInput
from app.models import Episode, Fact, MemoryEvent, Rule
from app.repositories import events as event_rows
from app.repositories.events import EventFilters
from app.services import actors

Memory = Episode | Fact | Rule


@dataclass(frozen=True)
class Event:
    """One audit event: what happened, to whose data, with what details.

    `actor` names a process (such as "consolidation") instead of the current actor's name;
    the key id is always the current actor's (`actors.current`).
    """

    event_type: str
    tenant_id: str
    payload: dict[str, Any] = field(default_factory=dict)
    actor: str | None = None


def type_name(model: type[Memory]) -> str:
    """The API name of a memory model: episode, fact or rule."""
    return {Episode: "episode", Fact: "fact", Rule: "rule"}[model]


def memory_event(event_type: str, tenant_id: str, row: Memory, **payload: Any) -> Event:
    """An event about one memory: its type and id, then `payload`."""
    return Event(
        event_type,
        tenant_id,
        {"memory_type": type_name(type(row)), "memory_id": str(row.id), **payload},
    )


async def record(session: AsyncSession, events: Iterable[Event]) -> None:
    """Append the events to memory_events, in one statement, in the caller's transaction,
    each naming the current actor (the request's API key or the running job)."""
    actor = actors.current()
    await event_rows.add_events(
        session,
        [
            {
                "event_type": e.event_type,
                "tenant_id": e.tenant_id,
                "payload": e.payload,
                "actor": e.actor or actor.name,
                "actor_key_id": actor.key_id,
            }
            for e in events
        ],
    )


async def list_events(
    session: AsyncSession,
    *,
    tenant_id: str,
    memory_id: uuid.UUID | None,
    event_type: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[MemoryEvent], str | None]:
    """A page of the tenant's audit events, newest first; `since` inclusive, `until` not."""
    if since is not None and until is not None and until <= since:
        raise InvalidInput("until must be later than since", field="until")
    filters = EventFilters(memory_id=memory_id, event_type=event_type, since=since, until=until)
    return await event_rows.list_events(
        session, tenant_id=tenant_id, filters=filters, limit=limit, cursor=cursor
    )
