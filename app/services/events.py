"""The one writer of the audit stream: every memory_events row goes through `record`.

The exceptions are the set-based sweeps (decay, cleanup): their SQL logs in the statement that
changes the rows, so a sweep of many rows stays one round trip.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, Fact, Rule
from app.repositories import events as event_rows

Memory = Episode | Fact | Rule


@dataclass(frozen=True)
class Event:
    """One audit event: what happened, to whose data, with what details."""

    event_type: str
    tenant_id: str
    payload: dict[str, Any] = field(default_factory=dict)
    actor: str | None = None


def type_name(model: type[Memory]) -> str:
    """The API name of a memory model: episode, fact or rule."""
    return {Episode: "episode", Fact: "fact", Rule: "rule"}[model]


def memory_event(event_type: str, tenant_id: str, row: Memory, **payload: Any) -> Event:
    """An event about one memory: its type and id, then `payload`."""
    return Event(event_type, tenant_id,
                 {"memory_type": type_name(type(row)), "memory_id": str(row.id), **payload})


async def record(session: AsyncSession, events: Iterable[Event]) -> None:
    """Append the events to memory_events, in one statement, in the caller's transaction."""
    await event_rows.add_events(session, [
        {"event_type": e.event_type, "tenant_id": e.tenant_id, "payload": e.payload,
         "actor": e.actor}
        for e in events
    ])
