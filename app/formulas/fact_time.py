"""Valid time without a database: where a fact version goes among its key's versions, and
the point in time a read asks for."""

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from app.core.clock import now_utc


class Version(Protocol):
    """A fact version as placement reads it."""

    valid_from: Any  # a datetime; Any admits the ORM's mapped column


V = TypeVar("V", bound=Version)


@dataclass(frozen=True)
class Placement(Generic[V]):
    """The neighbours of a new version in valid time."""

    previous: V | None  # the last version starting before it
    replaced: V | None  # a version starting at the same moment: corrected by it
    following: V | None  # the first version starting after it; None: it is current

    @property
    def predecessor(self) -> V | None:
        """The version the new one follows in the history."""
        return self.replaced or self.previous


def place(versions: list[V], valid_from: datetime) -> Placement[V]:
    """The place of a version starting at `valid_from` among `versions` (valid-time order)."""
    before = [v for v in versions if v.valid_from < valid_from]
    same = [v for v in versions if v.valid_from == valid_from]
    after = [v for v in versions if v.valid_from > valid_from]
    return Placement(
        before[-1] if before else None, same[-1] if same else None, after[0] if after else None
    )


def bounded_until(stated: datetime | None, placement: Placement[V]) -> datetime | None:
    """The new version's valid_until: the stated one, cut where its successor starts."""
    if placement.following is None:
        return stated
    start = placement.following.valid_from
    return start if stated is None or stated > start else stated


@dataclass(frozen=True)
class PointInTime:
    """A read at a point in time: the facts that held at `as_of` as believed at `known_at`
    (None: now)."""

    as_of: datetime
    known_at: datetime | None


def point_in_time(as_of: datetime | None, known_at: datetime | None) -> PointInTime | None:
    """The point a read asks for; None when it names neither time (today's read)."""
    if as_of is None and known_at is None:
        return None
    return PointInTime(as_of or now_utc(), known_at)


Periods = dict[uuid.UUID, tuple[datetime, datetime | None]]
