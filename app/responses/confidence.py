"""A fact's or rule's columns with its decayed confidence, as both responses show them."""

from datetime import datetime
from typing import Any

from app.core.clock import now_utc
from app.formulas.lifecycle import effective_confidence
from app.models import Fact, Rule


def _columns(row: Fact | Rule) -> dict[str, Any]:
    return {
        attr.key: getattr(row, attr.key)
        for attr in row.__mapper__.column_attrs
        if attr.key not in ("embedding", "embedding_next", "search_vector", "search_config")
    }


def with_confidence(row: Fact | Rule, now: datetime | None) -> dict[str, Any]:
    """The row's columns (no vectors) and its effective confidence at `now`."""
    eff = effective_confidence(
        row.confidence, row.decay_rate, row.last_confirmed_at, now or now_utc()
    )
    return {**_columns(row), "effective_confidence": eff}
