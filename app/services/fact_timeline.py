"""Where a new fact version goes among its key's versions in valid time, and what that changes.

The rule: the versions of a key Engram believes are ordered by `valid_from`; each holds until
the next one starts (or until its own `valid_until`, when that is earlier).

- A version starting after every other one is the current version: the previous current one
  becomes `superseded` and its `valid_until` closes at the new `valid_from`.
- A version starting before the current one (it arrives late, about an earlier period) goes
  into the history at its place: its predecessor's period closes at its `valid_from`, and it
  holds until its successor's `valid_from`. The current version stays current.
- A version starting at the same moment as a believed one corrects it: the later record wins,
  and the earlier one is no longer believed (`recorded_until` is set).
"""

import uuid
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.scope import transaction_now
from app.formulas.fact_time import Placement
from app.models import Fact
from app.repositories import fact_time as time_rows
from app.repositories import links as link_rows
from app.repositories import memories as memory_rows
from app.services import events
from app.services.events import Event, memory_event


async def apply(
    session: AsyncSession,
    *,
    tenant_id: str,
    fact: Fact,
    placement: Placement[Fact],
    superseded: Fact | None,
) -> list[Event]:
    """Close or correct the neighbours of the stored version `fact` and thread it into the
    supersession chain; the events of each transition. `superseded`: the version that was
    current until `fact` took its place (already marked superseded), if any."""
    happened: list[Event] = []
    replaced, previous, following = placement.replaced, placement.previous, placement.following
    announced = False
    if replaced is not None:
        await memory_rows.update_row(
            session,
            Fact,
            tenant_id=tenant_id,
            memory_id=replaced.id,
            values={
                "validity": "superseded",
                "recorded_until": time_rows.record_end(
                    Fact.created_at, await transaction_now(session)
                ),
            },
        )
        happened.append(
            memory_event(
                "fact_superseded",
                tenant_id,
                replaced,
                superseded_by=str(fact.id),
                reason="corrected for the same valid period",
            )
        )
        announced = superseded is not None and replaced.id == superseded.id
    elif previous is not None and (
        previous.valid_until is None or previous.valid_until > fact.valid_from
    ):
        was_current = superseded is not None and previous.id == superseded.id
        before = _iso(previous.valid_until)
        await time_rows.restate(session, previous, valid_until=fact.valid_from)
        happened.append(
            memory_event(
                "fact_superseded" if was_current else "fact_period_closed",
                tenant_id,
                previous,
                superseded_by=str(fact.id),
                valid_until=fact.valid_from.isoformat(),
                previous_valid_until=before,
            )
        )
        announced = was_current
    if superseded is not None and not announced:
        happened.append(
            memory_event("fact_superseded", tenant_id, superseded, superseded_by=str(fact.id))
        )
    predecessor = placement.predecessor
    if predecessor is not None:
        await link_rows.link_supersedes(
            session, tenant_id=tenant_id, newer=fact.id, older=predecessor.id
        )
    if following is not None:
        await _chain(session, tenant_id, newer=following.id, older=fact.id)
        happened.append(
            memory_event(
                "fact_placed_in_history",
                tenant_id,
                fact,
                valid_from=fact.valid_from.isoformat(),
                valid_until=_iso(fact.valid_until),
                followed_by=str(following.id),
            )
        )
    return happened


async def _chain(
    session: AsyncSession, tenant_id: str, *, newer: uuid.UUID, older: uuid.UUID
) -> None:
    await memory_rows.update_row(
        session, Fact, tenant_id=tenant_id, memory_id=newer, values={"supersedes_id": older}
    )
    await link_rows.link_supersedes(session, tenant_id=tenant_id, newer=newer, older=older)


async def close_superseded(
    session: AsyncSession, *, tenant_id: str, target: Fact, fact: Fact
) -> None:
    """A fact of another key replaces `target`: the target becomes superseded, its period
    closes where the new fact starts (when that is inside it), and the event says so."""
    closes = fact.valid_from > target.valid_from and (
        target.valid_until is None or target.valid_until > fact.valid_from
    )
    if closes:
        await time_rows.restate(
            session, target, valid_until=fact.valid_from, values={"validity": "superseded"}
        )
    else:
        await memory_rows.update_row(
            session,
            Fact,
            tenant_id=tenant_id,
            memory_id=target.id,
            values={"validity": "superseded"},
        )
    await events.record(
        session,
        [
            memory_event(
                "fact_superseded",
                tenant_id,
                target,
                superseded_by=str(fact.id),
                valid_until=fact.valid_from.isoformat() if closes else _iso(target.valid_until),
            )
        ],
    )


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
