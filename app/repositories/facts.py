"""SQL particular to facts: the listing, a new version, the supersession key and the
supersession chain."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, literal, select, text, true, tuple_, union_all
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
    """Every version of the fact's key reachable by supersession, newest first, in one
    statement: up to `MAX_CHAIN` newer ones (each the newest of those superseding the one
    before) and up to `MAX_CHAIN` older ones."""
    start = select(Fact.id, Fact.supersedes_id, literal(0).label("step")).where(
        Fact.tenant_id == tenant_id, Fact.id == fact.id
    )
    newer = start.cte("newer", recursive=True)
    successor = (
        select(Fact.id, Fact.supersedes_id)
        .where(Fact.tenant_id == tenant_id, Fact.supersedes_id == newer.c.id)
        .order_by(Fact.created_at.desc())
        .limit(1)
        .lateral("successor")
    )
    newer = newer.union_all(
        select(successor.c.id, successor.c.supersedes_id, newer.c.step + 1)
        .select_from(newer.join(successor, true()))
        .where(newer.c.step < MAX_CHAIN)
    )
    older = start.cte("older", recursive=True)
    older = older.union_all(
        select(Fact.id, Fact.supersedes_id, older.c.step + 1).where(
            Fact.tenant_id == tenant_id, Fact.id == older.c.supersedes_id, older.c.step < MAX_CHAIN
        )
    )
    chain = union_all(
        select(newer.c.id, (-newer.c.step).label("position")),
        select(older.c.id, older.c.step).where(older.c.step > 0),
    ).subquery("chain")
    stmt = (
        select(Fact)
        .join(chain, chain.c.id == Fact.id)
        .where(Fact.tenant_id == tenant_id)
        .order_by(chain.c.position)
    )
    return list((await session.execute(stmt)).scalars())


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
