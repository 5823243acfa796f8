"""SQL that the record tables keyed by id within a tenant share: one row, an insert with its
tsvector, an update stamped `updated_at`."""

import uuid
from typing import Any, TypeVar

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Arc, Entity, Procedure, Run
from app.repositories.memories import search_columns

RecordT = TypeVar("RecordT", bound=Arc | Procedure | Run)
StampedT = TypeVar("StampedT", bound=Arc | Entity | Procedure)


async def one_of_tenant(
    session: AsyncSession,
    model: type[RecordT],
    *,
    tenant_id: str,
    row_id: uuid.UUID,
    for_update: bool = False,
) -> RecordT | None:
    """One row of the tenant; `for_update` locks it and refreshes the session's copy."""
    stmt = select(model).where(model.id == row_id, model.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def insert_searchable(
    session: AsyncSession, model: type[RecordT], *, values: dict[str, Any], search_text: str
) -> RecordT:
    """Insert one row with the tsvector of `search_text` and return it."""
    stmt = insert(model).values(**values, **(await search_columns(search_text))).returning(model)
    return (await session.execute(stmt)).scalar_one()


async def update_stamped(
    session: AsyncSession,
    model: type[StampedT],
    *,
    tenant_id: str,
    row_id: uuid.UUID,
    values: dict[str, Any],
) -> StampedT:
    """Apply `values` to one row of the tenant, set `updated_at` to now, and return it."""
    stmt = (
        update(model)
        .where(model.tenant_id == tenant_id, model.id == row_id)
        .values(**values, updated_at=func.now())
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one()
