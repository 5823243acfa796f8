"""The one way a list query turns set filter values into WHERE clauses."""

from typing import Any

from sqlalchemy import ColumnElement


def equal_values(model: Any, **values: Any) -> list[ColumnElement[bool]]:
    """`column = value` for each value given (not None), by the model's column name."""
    return [getattr(model, name) == value for name, value in values.items() if value is not None]


def equal(model: Any, filters: object, *fields: str) -> list[ColumnElement[bool]]:
    """`column = value` for each named field of `filters` that is set (not None)."""
    return equal_values(model, **{field: getattr(filters, field) for field in fields})
