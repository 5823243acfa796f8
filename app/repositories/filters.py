"""The one way a list query turns set filter values into WHERE clauses, and reads rows by id."""

import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

RowT = TypeVar("RowT")


def uuid_or_none(value: Any) -> uuid.UUID | None:
    """`value` as a UUID when it spells one (a session id may name an inferred session)."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def equal_values(model: Any, **values: Any) -> list[ColumnElement[bool]]:
    """`column = value` for each value given (not None), by the model's column name."""
    return [getattr(model, name) == value for name, value in values.items() if value is not None]


def equal(model: Any, filters: object, *fields: str) -> list[ColumnElement[bool]]:
    """`column = value` for each named field of `filters` that is set (not None)."""
    return equal_values(model, **{field: getattr(filters, field) for field in fields})


async def rows_by_id(
    session: AsyncSession, model: type[RowT], *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, RowT]:
    """The tenant's rows of `model` with these ids, by id (an empty list reads nothing)."""
    if not ids:
        return {}
    table: Any = model
    stmt = select(model).where(table.tenant_id == tenant_id, table.id.in_(list(ids)))
    rows: Any = (await session.execute(stmt)).scalars()
    return {row.id: row for row in rows}
