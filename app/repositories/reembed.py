"""SQL for re-embedding memories made by another embedding model (or all of them), and for
embedding those stored without a vector."""

import uuid
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, Fact, Rule
from app.repositories.embedding_switches import VECTOR_COLUMNS

Memory = type[Episode] | type[Fact] | type[Rule]


async def stale_rows(session: AsyncSession, model: Memory, *, version_id: int,
                     limit: int) -> list[tuple[uuid.UUID, str, str]]:
    """Up to `limit` (id, tenant_id, content) rows whose vectors came from another model
    version (or that lost their passages)."""
    stmt = (select(model.id, model.tenant_id, model.content)
            .where(model.embedding_version_id.is_distinct_from(version_id))
            .order_by(model.id).limit(limit).with_for_update(skip_locked=True))
    return [(row[0], row[1], row[2]) for row in await session.execute(stmt)]


async def unembedded_rows(session: AsyncSession, model: Memory, *, after: uuid.UUID | None,
                          limit: int) -> list[tuple[uuid.UUID, str, str]]:
    """Up to `limit` (id, tenant_id, content) rows stored without a vector, by id after
    `after` (read, not locked: the model runs after this transaction)."""
    stmt = select(model.id, model.tenant_id, model.content).where(model.embedding.is_(None))
    if after is not None:
        stmt = stmt.where(model.id > after)
    stmt = stmt.order_by(model.id).limit(limit)
    return [(row[0], row[1], row[2]) for row in await session.execute(stmt)]


async def lock_unembedded(session: AsyncSession, model: Memory, *,
                          contents: dict[uuid.UUID, str]) -> set[uuid.UUID]:
    """Of the rows of `contents` (id: the content that was embedded), those still there,
    still without a vector and with that content, locked until the transaction ends."""
    if not contents:
        return set()
    stmt = (select(model.id, model.content)
            .where(model.id.in_(list(contents)), model.embedding.is_(None))
            .with_for_update())
    return {row_id for row_id, content in await session.execute(stmt)
            if contents[row_id] == content}


async def unembedded_count(session: AsyncSession) -> int:
    """Episodes, facts and rules of every tenant (system scope) stored without a vector."""
    counts = [select(func.count()).select_from(model).where(model.embedding.is_(None))
              .scalar_subquery() for model in (Episode, Fact, Rule)]
    return int((await session.execute(select(sum(counts[1:], counts[0])))).scalar_one())


async def rows_after(session: AsyncSession, model: Memory, *, after: uuid.UUID | None,
                     limit: int) -> list[tuple[uuid.UUID, str, str]]:
    """Up to `limit` (id, tenant_id, content) rows by id, after `after`, whatever made their
    vectors."""
    stmt = select(model.id, model.tenant_id, model.content)
    if after is not None:
        stmt = stmt.where(model.id > after)
    stmt = stmt.order_by(model.id).limit(limit).with_for_update()
    return [(row[0], row[1], row[2]) for row in await session.execute(stmt)]


async def store_vectors(session: AsyncSession, model: Memory, *,
                        columns: dict[uuid.UUID, dict[str, Any]]) -> None:
    """Write rows' vector columns (`embedding`, `embedding_next` and their versions) in one
    executemany."""
    table: Any = model.__table__
    stmt = (update(table).where(table.c.id == bindparam("row_id"))
            .values({name: bindparam(f"v_{name}") for name in VECTOR_COLUMNS}))
    await session.execute(stmt, [{"row_id": key,
                                  **{f"v_{name}": values[name] for name in VECTOR_COLUMNS}}
                                 for key, values in columns.items()])
