"""Sessions inferred by the gap rule for episodes stored without a session_id."""

import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Stored:
    """A stored episode next to a new one: its inferred session and when it occurred."""

    session: uuid.UUID
    occurred_at: datetime


@dataclass(frozen=True)
class Arrival:
    """A new episode without a session_id: its butler, when it occurred and its stored
    neighbours of the same butler (the latest at or before it, the earliest after it)."""

    butler: str
    occurred_at: datetime
    before: Stored | None = None
    after: Stored | None = None


def assign_sessions(
    arrivals: Sequence[Arrival],
    *,
    gap: timedelta,
    new_session: Callable[[], uuid.UUID] = uuid.uuid4,
) -> list[uuid.UUID]:
    """Each arrival's session, in the arrivals' order.

    In time order per butler, an episode joins the session of the episode just before it
    (of this batch or stored) when at most `gap` lies between them, else that of the stored
    episode just after it within `gap`, else starts a session of its own.
    """
    order = sorted(
        range(len(arrivals)), key=lambda i: (arrivals[i].butler, arrivals[i].occurred_at)
    )
    sessions: list[uuid.UUID | None] = [None] * len(arrivals)
    previous: dict[str, Stored] = {}
    for i in order:
        arrival = arrivals[i]
        before = _later(previous.get(arrival.butler), arrival.before)
        if before is not None and arrival.occurred_at - before.occurred_at <= gap:
            session = before.session
        elif arrival.after is not None and arrival.after.occurred_at - arrival.occurred_at <= gap:
            session = arrival.after.session
        else:
            session = new_session()
        sessions[i] = session
        previous[arrival.butler] = Stored(session, arrival.occurred_at)
    return [session for session in sessions if session is not None]


def chain(times: Sequence[tuple[Hashable, datetime]], *, gap: timedelta) -> list[int]:
    """Session numbers for (group, time) points by the gap rule alone, in the points' order
    (what `assign_sessions` gives a batch with nothing stored)."""
    numbers: dict[uuid.UUID, int] = {}
    sessions = assign_sessions([Arrival(str(group), at) for group, at in times], gap=gap)
    return [numbers.setdefault(session, len(numbers)) for session in sessions]


def _later(a: Stored | None, b: Stored | None) -> Stored | None:
    if a is None or b is None:
        return a or b
    return a if a.occurred_at >= b.occurred_at else b
