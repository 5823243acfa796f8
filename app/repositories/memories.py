"""SQL shared by the three memory tables: fetch, lock, reference bump, insert, update."""

import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, bindparam, func, insert, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, Fact, Rule

M = TypeVar("M", bound=Episode | Fact | Rule)

MODELS: dict[str, type[Episode] | type[Fact] | type[Rule]] = {
    "episode": Episode,
    "fact": Fact,
    "rule": Rule,
}


def to_tsvector(text: str | ColumnElement[Any]) -> ColumnElement[Any]:
    """SQL for the english tsvector of already-preprocessed text."""
    return func.to_tsvector(literal_column("'english'::regconfig"), text)


async def get(session: AsyncSession, model: type[M], *, tenant_id: str, memory_id: uuid.UUID,
              for_update: bool = False) -> M | None:
    """One row of the tenant, optionally locked FOR UPDATE."""
    stmt = select(model).where(model.id == memory_id, model.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


async def bump_reference(session: AsyncSession, model: type[M], *, tenant_id: str,
                         memory_id: uuid.UUID) -> M | None:
    """Atomically count one reference and return the updated row (None when absent)."""
    stmt = (
        update(model)
        .where(model.id == memory_id, model.tenant_id == tenant_id)
        .values(reference_count=model.reference_count + 1, last_referenced_at=func.now())
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def insert_rows(session: AsyncSession, model: type[M], rows: Sequence[dict[str, Any]],
                      **sql_values: Any) -> list[M]:
    """Insert rows (each with a `search_text` for its tsvector) and return them in order.

    `sql_values` are SQL expressions applied to every row, such as `expires_at`.
    """
    stmt = (
        insert(model)
        .values(search_vector=to_tsvector(bindparam("search_text")), **sql_values)
        .returning(model, sort_by_parameter_order=True)
    )
    result = await session.execute(stmt, list(rows))
    return list(result.scalars().all())


async def update_row(session: AsyncSession, model: type[M], *, memory_id: uuid.UUID,
                     values: dict[str, Any]) -> M:
    """Apply `values` to one row and return it."""
    stmt = (
        update(model)
        .where(model.id == memory_id)
        .values(**values)
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one()
