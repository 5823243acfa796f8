"""SQL for re-embedding memories made by another embedding model (or all of them), and for
embedding those stored without a vector."""

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, delete, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import EmbeddingBacklogLease, EmbeddingFailure, Episode, Fact, Rule
from app.repositories.embedding_switches import VECTOR_COLUMNS

Memory = type[Episode] | type[Fact] | type[Rule]
MEMORY_TYPES: dict[Any, str] = {Episode: "episode", Fact: "fact", Rule: "rule"}
# A memory set aside is tried again this long after its first failure, twice as long after
# each further one, at most a day later.
FIRST_RETRY = timedelta(minutes=1)
LONGEST_RETRY = timedelta(days=1)
MAX_ERROR_CHARS = 500


async def tenants_with_rows(
    session: AsyncSession, model: Memory, *, stale_for: int | None = None
) -> list[str]:
    """The tenants with rows in `model`'s table (read, not locked); with `stale_for`, only
    those with rows whose vectors came from another model version than that one."""
    stmt = select(model.tenant_id).distinct().order_by(model.tenant_id)
    if stale_for is not None:
        stmt = stmt.where(model.embedding_version_id.is_distinct_from(stale_for))
    return list((await session.scalars(stmt)).all())


async def stale_rows(
    session: AsyncSession, model: Memory, *, tenant_id: str, version_id: int, limit: int
) -> list[tuple[uuid.UUID, str]]:
    """Up to `limit` (id, content) rows of the tenant whose vectors came from another model
    version (or that lost their passages), locked (one tenant: on a Citus cluster a locking
    read must stay on one shard)."""
    stmt = (
        select(model.id, model.content)
        .where(
            model.tenant_id == tenant_id,
            model.embedding_version_id.is_distinct_from(version_id),
        )
        .order_by(model.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [(row[0], row[1]) for row in await session.execute(stmt)]


async def unembedded_rows(
    session: AsyncSession, model: Memory, *, after: uuid.UUID | None, limit: int
) -> list[tuple[uuid.UUID, str, str]]:
    """Up to `limit` (id, tenant_id, content) rows stored without a vector, by id after
    `after`, leaving out those set aside until later (read, not locked: the model runs
    after this transaction)."""
    set_aside = select(EmbeddingFailure.memory_id).where(
        EmbeddingFailure.tenant_id == model.tenant_id,
        EmbeddingFailure.memory_type == MEMORY_TYPES[model],
        EmbeddingFailure.memory_id == model.id,
        EmbeddingFailure.retry_at > func.now(),
    )
    stmt = select(model.id, model.tenant_id, model.content).where(
        model.embedding.is_(None), ~set_aside.exists()
    )
    if after is not None:
        stmt = stmt.where(model.id > after)
    stmt = stmt.order_by(model.id).limit(limit)
    return [(row[0], row[1], row[2]) for row in await session.execute(stmt)]


async def lock_unembedded(
    session: AsyncSession, model: Memory, *, tenant_id: str, contents: dict[uuid.UUID, str]
) -> set[uuid.UUID]:
    """Of the tenant's rows of `contents` (id: the content that was embedded), those still
    there, still without a vector and with that content, locked until the transaction ends."""
    if not contents:
        return set()
    stmt = (
        select(model.id, model.content)
        .where(
            model.tenant_id == tenant_id,
            model.id.in_(list(contents)),
            model.embedding.is_(None),
        )
        .with_for_update()
    )
    return {
        row_id for row_id, content in await session.execute(stmt) if contents[row_id] == content
    }


async def unembedded_count(session: AsyncSession, *, tenant_id: str | None = None) -> int:
    """Episodes, facts and rules stored without a vector: of every tenant (system scope), or
    of `tenant_id`."""
    counts = []
    for model in (Episode, Fact, Rule):
        stmt = select(func.count()).select_from(model).where(model.embedding.is_(None))
        if tenant_id is not None:
            stmt = stmt.where(model.tenant_id == tenant_id)
        counts.append(stmt.scalar_subquery())
    return int((await session.execute(select(sum(counts[1:], counts[0])))).scalar_one())


async def rows_after(
    session: AsyncSession,
    model: Memory,
    *,
    tenant_id: str,
    after: uuid.UUID | None,
    limit: int,
) -> list[tuple[uuid.UUID, str]]:
    """Up to `limit` (id, content) rows of the tenant by id, after `after`, whatever made
    their vectors, locked."""
    stmt = select(model.id, model.content).where(model.tenant_id == tenant_id)
    if after is not None:
        stmt = stmt.where(model.id > after)
    stmt = stmt.order_by(model.id).limit(limit).with_for_update()
    return [(row[0], row[1]) for row in await session.execute(stmt)]


async def store_vectors(
    session: AsyncSession,
    model: Memory,
    *,
    tenant_id: str,
    columns: dict[uuid.UUID, dict[str, Any]],
) -> None:
    """Write the tenant's rows' vector columns (`embedding`, `embedding_next` and their
    versions) in one executemany."""
    table: Any = model.__table__
    stmt = (
        update(table)
        .where(table.c.tenant_id == tenant_id, table.c.id == bindparam("row_id"))
        .values({name: bindparam(f"v_{name}") for name in VECTOR_COLUMNS})
    )
    await session.execute(
        stmt,
        [
            {"row_id": key, **{f"v_{name}": values[name] for name in VECTOR_COLUMNS}}
            for key, values in columns.items()
        ],
    )


async def set_aside(
    session: AsyncSession, model: Memory, *, rows: list[tuple[uuid.UUID, str]], error: str
) -> None:
    """Record one more failure of each (id, tenant_id) row, to be tried again later: after
    FIRST_RETRY, doubling with each failure, at most LONGEST_RETRY."""
    if not rows:
        return
    table: Any = EmbeddingFailure.__table__
    stmt = insert(table).values(
        [
            {
                "memory_type": MEMORY_TYPES[model],
                "memory_id": row_id,
                "tenant_id": tenant_id,
                "failures": 1,
                "retry_at": func.now() + FIRST_RETRY,
                "error": error[:MAX_ERROR_CHARS],
            }
            for row_id, tenant_id in rows
        ]
    )
    failures = table.c.failures + 1
    stmt = stmt.on_conflict_do_update(
        index_elements=[table.c.tenant_id, table.c.memory_type, table.c.memory_id],
        set_={
            "failures": failures,
            "error": stmt.excluded.error,
            "retry_at": func.now()
            + func.least(
                FIRST_RETRY * func.power(2, func.least(table.c.failures, 20)), LONGEST_RETRY
            ),
        },
    )
    await session.execute(stmt)


async def forget_failures(
    session: AsyncSession, model: Memory, *, tenant_id: str, ids: list[uuid.UUID]
) -> None:
    """The failures of these rows of the tenant are over: they have their vectors."""
    if ids:
        await session.execute(
            delete(EmbeddingFailure).where(
                EmbeddingFailure.tenant_id == tenant_id,
                EmbeddingFailure.memory_type == MEMORY_TYPES[model],
                EmbeddingFailure.memory_id.in_(ids),
            )
        )


async def set_aside_count(session: AsyncSession) -> int:
    """Memories of every tenant (system scope) set aside until later."""
    stmt = (
        select(func.count())
        .select_from(EmbeddingFailure)
        .where(EmbeddingFailure.retry_at > func.now())
    )
    return int((await session.execute(stmt)).scalar_one())


async def claim_lease(session: AsyncSession, *, holder: str, seconds: float) -> bool:
    """Take (or renew) the backlog's lease for `seconds` unless another holder's is running;
    whether `holder` has it."""
    table: Any = EmbeddingBacklogLease.__table__
    until = func.now() + timedelta(seconds=seconds)
    stmt = insert(table).values(id=1, holder=holder, until=until)
    stmt = stmt.on_conflict_do_update(
        index_elements=[table.c.id],
        set_={"holder": holder, "until": until},
        where=or_(table.c.until < func.now(), table.c.holder == holder),
    )
    return (await session.execute(stmt.returning(table.c.holder))).first() is not None


async def release_lease(session: AsyncSession, *, holder: str) -> None:
    """End `holder`'s lease, if it still has it."""
    await session.execute(
        delete(EmbeddingBacklogLease).where(EmbeddingBacklogLease.holder == holder)
    )
