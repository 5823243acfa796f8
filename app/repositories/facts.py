"""SQL particular to facts: the listing, a new version, the supersession key and the
supersession chain."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Fact
from app.repositories import fact_time, pagination
from app.repositories import memories as memory_rows
from app.repositories.filters import equal
from app.repositories.memory_filters import compile_filter
from app.schemas.filters import MemoryFilter

MAX_CHAIN = 1000


@dataclass(frozen=True)
class FactFilters:
    """What a fact listing keeps; None means any. `scope` matches that scope only; subject and
    predicate are compared as normalised keys. With `as_of`, the versions that held then as
    believed at `known_at` (None: now)."""

    subject_key: str | None = None
    predicate_key: str | None = None
    scope: str | None = None
    validity: str | None = None
    entity_id: uuid.UUID | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    memory_filter: MemoryFilter | None = None


async def list_facts(
    session: AsyncSession, *, tenant_id: str, filters: FactFilters, limit: int, cursor: str | None
) -> tuple[list[Fact], str | None]:
    """A page of the tenant's facts matching `filters`, newest first."""
    stmt = select(Fact).where(
        Fact.tenant_id == tenant_id,
        *equal(Fact, filters, "subject_key", "predicate_key", "scope", "validity", "entity_id"),
        *compile_filter("fact", filters.memory_filter),
    )
    if filters.as_of is not None:
        stmt = stmt.where(*fact_time.held_at(filters.as_of, filters.known_at))
    return await pagination.list_page(
        session, stmt, order=(Fact.created_at, Fact.id), limit=limit, cursor=cursor
    )


async def insert_fact(session: AsyncSession, row: dict[str, Any], *, valid_from: datetime) -> Fact:
    """Insert a new fact version (its columns, with a `search_text`) valid from `valid_from`,
    confirmed now."""
    [fact] = await memory_rows.insert_rows(
        session, Fact, [row], last_confirmed_at=func.now(), valid_from=valid_from
    )
    return fact


async def lock_key(session: AsyncSession, key: str) -> None:
    """Serialise writers of one supersession key until the transaction ends."""
    await session.execute(
        text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key}
    )


async def lock_keys(session: AsyncSession, keys: Sequence[str]) -> None:
    """`lock_key` for each key, in the order given, in one statement."""
    if keys:
        await session.execute(
            text(
                "SELECT pg_advisory_xact_lock(hashtextextended(k, 0)) "
                "FROM unnest(CAST(:keys AS text[])) AS t(k)"
            ),
            {"keys": list(keys)},
        )


async def supersession_chain(session: AsyncSession, *, tenant_id: str, fact: Fact) -> list[Fact]:
    """Every version of the fact's key reachable by supersession, newest first."""
    newer: list[Fact] = []
    current = fact
    for _ in range(MAX_CHAIN):
        stmt = select(Fact).where(Fact.tenant_id == tenant_id, Fact.supersedes_id == current.id)
        successor = (
            await session.execute(stmt.order_by(Fact.created_at.desc()).limit(1))
        ).scalar_one_or_none()
        if successor is None:
            break
        newer.append(successor)
        current = successor
    older: list[Fact] = []
    current = fact
    for _ in range(MAX_CHAIN):
        if current.supersedes_id is None:
            break
        stmt = select(Fact).where(Fact.tenant_id == tenant_id, Fact.id == current.supersedes_id)
        predecessor = (await session.execute(stmt)).scalar_one_or_none()
        if predecessor is None:
            break
        older.append(predecessor)
        current = predecessor
    return [*reversed(newer), fact, *older]


async def active_by_keys(
    session: AsyncSession,
    *,
    tenant_id: str,
    keys: Sequence[tuple[str, str, str]],
    for_update: bool = False,
) -> dict[tuple[str, str, str], Fact]:
    """The active subject-keyed fact of each (scope, subject_key, predicate_key), by key."""
    if not keys:
        return {}
    stmt = select(Fact).where(
        Fact.tenant_id == tenant_id,
        Fact.validity == "active",
        Fact.entity_id.is_(None),
        tuple_(Fact.scope, Fact.subject_key, Fact.predicate_key).in_(list(set(keys))),
    )
    if for_update:
        stmt = stmt.with_for_update()
    rows = (await session.execute(stmt)).scalars()
    return {(row.scope, row.subject_key, row.predicate_key): row for row in rows}


async def by_ids(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], for_update: bool = False
) -> dict[uuid.UUID, Fact]:
    """The tenant's facts with these ids, by id."""
    if not ids:
        return {}
    stmt = select(Fact).where(Fact.tenant_id == tenant_id, Fact.id.in_(list(set(ids))))
    if for_update:
        stmt = stmt.with_for_update()
    return {row.id: row for row in (await session.execute(stmt)).scalars()}
