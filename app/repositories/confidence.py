"""The SQL twin of `lifecycle.effective_confidence`: the one builder search and decay use."""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    SQLColumnExpression,
    case,
    cast,
    extract,
    func,
    literal,
    literal_column,
)
from sqlalchemy.dialects import postgresql

from app.core.constants import SECONDS_PER_DAY


def effective_confidence_sql(
    confidence: SQLColumnExpression[Any],
    decay_rate: SQLColumnExpression[Any],
    last_confirmed_at: SQLColumnExpression[Any],
    now: datetime | ColumnElement[Any] | None = None,
) -> ColumnElement[float]:
    """confidence * exp(-decay_rate * days since confirmation); confidence itself when the
    rate is 0, and 0 when never confirmed. `now` (a time, or SQL) defaults to the
    transaction's now()."""
    at: ColumnElement[Any] = (
        func.now() if now is None else literal(now) if isinstance(now, datetime) else now
    )
    days = func.greatest(
        0.0, cast(extract("epoch", at - last_confirmed_at), Float) / SECONDS_PER_DAY
    )
    return case(
        (decay_rate == 0.0, confidence),
        (last_confirmed_at.is_(None), 0.0),
        else_=confidence * func.exp(-decay_rate * days),
    )


def effective_confidence_text(alias: str, now: str = "now()") -> str:
    """`effective_confidence_sql` as SQL text over the columns of table alias `alias`, at
    the SQL `now`."""
    expression = effective_confidence_sql(
        literal_column(f"{alias}.confidence"),
        literal_column(f"{alias}.decay_rate"),
        literal_column(f"{alias}.last_confirmed_at"),
        literal_column(now),
    )
    return str(
        expression.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    )
