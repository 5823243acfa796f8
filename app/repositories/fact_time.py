"""SQL of facts in time: a key's versions, their valid periods, and reads at a point in time."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    DateTime,
    bindparam,
    exists,
    func,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.scope import transaction_now
from app.formulas.fact_time import Periods, PointInTime
from app.models import Fact, FactPeriod


def _contains(lower: Any, upper: Any, point: Any) -> ColumnElement[bool]:
    """tstzrange(lower, upper) @> point: the form the GiST indexes are built on."""
    return func.tstzrange(lower, upper).op("@>", return_type=Boolean)(point)


def _between(lower: Any, upper: Any, point: Any) -> ColumnElement[bool]:
    """lower <= point < upper (upper NULL: open): what `_contains` says, in a form no range
    index serves."""
    return (lower <= point) & (upper.is_(None) | (upper > point))


def held_at(as_of: Any, known_at: Any | None, *, ranked: bool = False) -> list[ColumnElement[bool]]:
    """Facts that held at `as_of` (valid time) as Engram believed at `known_at` (record time).

    Without `known_at`, what is believed now: the facts' own columns. With it, the fact was
    stored by then and not yet given up, and the period it was believed to have at that
    moment (`fact_periods`) contains `as_of`. Either may be a bound parameter.

    `ranked`: for a search, whose legs read their nearest or best-matching rows first and
    keep the facts that held, instead of reading every fact that held through the range index
    (about one version per key, which the planner underestimates).
    """
    if known_at is None:
        contains = _between if ranked else _contains
        return [Fact.recorded_until.is_(None), contains(Fact.valid_from, Fact.valid_until, as_of)]
    period = exists().where(
        FactPeriod.fact_id == Fact.id,
        FactPeriod.tenant_id == Fact.tenant_id,
        _contains(FactPeriod.recorded_at, FactPeriod.recorded_until, known_at),
        _contains(FactPeriod.valid_from, FactPeriod.valid_until, as_of),
    )
    return [_contains(Fact.created_at, Fact.recorded_until, known_at), period]


async def believed_versions(
    session: AsyncSession,
    *,
    tenant_id: str,
    scope: str,
    subject_key: str,
    predicate_key: str,
    entity_id: uuid.UUID | None,
) -> list[Fact]:
    """The versions of a key Engram believes now (active or superseded), in valid-time order
    (valid_from, then storage), locked FOR UPDATE."""
    stmt = select(Fact).where(
        Fact.tenant_id == tenant_id,
        Fact.scope == scope,
        Fact.predicate_key == predicate_key,
        Fact.validity.in_(("active", "superseded")),
        Fact.recorded_until.is_(None),
    )
    if entity_id is None:
        stmt = stmt.where(Fact.entity_id.is_(None), Fact.subject_key == subject_key)
    else:
        stmt = stmt.where(Fact.entity_id == entity_id)
    stmt = stmt.order_by(Fact.valid_from, Fact.created_at, Fact.id).with_for_update()
    return list((await session.execute(stmt)).scalars())


def record_end(started: Any, now: datetime) -> ColumnElement[Any]:
    """When Engram stops believing a row that it began believing at `started`: `now` (the
    transaction's, `transaction_now`), or `started` itself when this transaction began before
    the row's own committed (record time never runs backwards)."""
    return func.greatest(bindparam(None, now, type_=DateTime(timezone=True)), started)


async def open_period(session: AsyncSession, fact: Fact) -> None:
    """Record the valid period a new version is believed to have, from now."""
    await session.execute(
        FactPeriod.__table__.insert().values(  # type: ignore[attr-defined]
            tenant_id=fact.tenant_id,
            fact_id=fact.id,
            valid_from=fact.valid_from,
            valid_until=fact.valid_until,
        )
    )


async def restate(
    session: AsyncSession,
    fact: Fact,
    *,
    valid_until: datetime | None,
    values: dict[str, Any] | None = None,
) -> Fact:
    """Give the fact a new valid_until (and `values`) from now on: the period believed until
    now is closed, the new one opened."""
    await session.execute(
        update(FactPeriod)
        .where(
            FactPeriod.tenant_id == fact.tenant_id,
            FactPeriod.fact_id == fact.id,
            FactPeriod.recorded_until.is_(None),
        )
        .values(recorded_until=record_end(FactPeriod.recorded_at, await transaction_now(session)))
        .execution_options(synchronize_session=False)
    )
    updated = (
        await session.execute(
            update(Fact)
            .where(Fact.tenant_id == fact.tenant_id, Fact.id == fact.id)
            .values(valid_until=valid_until, **(values or {}))
            .returning(Fact)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
    ).scalar_one()
    await open_period(session, updated)
    return updated


async def fill_missing_periods(session: AsyncSession, *, tenant_id: str) -> None:
    """Give every fact of the tenant without a period its present one, believed since it was
    stored."""
    # Read, then inserted as values: a distributed INSERT ... SELECT whose new rows take a
    # generated id goes through COPY, which row-level security refuses.
    missing = (
        await session.execute(
            select(Fact.id, Fact.valid_from, Fact.valid_until, Fact.created_at).where(
                Fact.tenant_id == tenant_id,
                ~exists().where(
                    FactPeriod.tenant_id == Fact.tenant_id, FactPeriod.fact_id == Fact.id
                ),
            )
        )
    ).all()
    if missing:
        await session.execute(
            FactPeriod.__table__.insert(),  # type: ignore[attr-defined]
            [
                {
                    "tenant_id": tenant_id,
                    "fact_id": row.id,
                    "valid_from": row.valid_from,
                    "valid_until": row.valid_until,
                    "recorded_at": row.created_at,
                }
                for row in missing
            ],
        )


async def believed_periods(
    session: AsyncSession, *, tenant_id: str, fact_ids: list[uuid.UUID], known_at: datetime
) -> dict[uuid.UUID, tuple[datetime, datetime | None]]:
    """The valid period each of the facts was believed to have at `known_at`."""
    if not fact_ids:
        return {}
    stmt = select(FactPeriod.fact_id, FactPeriod.valid_from, FactPeriod.valid_until).where(
        FactPeriod.tenant_id == tenant_id,
        FactPeriod.fact_id.in_(fact_ids),
        _contains(FactPeriod.recorded_at, FactPeriod.recorded_until, known_at),
    )
    return {row.fact_id: (row.valid_from, row.valid_until) for row in await session.execute(stmt)}


async def periods_at(
    session: AsyncSession, *, tenant_id: str, facts: list[Fact], at: PointInTime | None
) -> Periods:
    """The valid period each fact was believed to have at `at.known_at`, to show instead of
    today's; empty for a read as believed now."""
    if at is None or at.known_at is None:
        return {}
    return await believed_periods(
        session, tenant_id=tenant_id, fact_ids=[fact.id for fact in facts], known_at=at.known_at
    )
