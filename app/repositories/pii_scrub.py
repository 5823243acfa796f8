"""SQL of the PII scrub beyond run messages: runs, feedback rationales, rules, episodes.

Each table is read in id order after a keyset, only rows the scrub has not checked yet
(`scrubbed_at` is null) unless every row is asked for; a rewrite applies only when the
columns still hold what was read.
"""

import uuid
from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import Table, func, select, union, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, Rule, Run, RunFeedback
from app.repositories.memories import search_columns

Scrubbed = TypeVar("Scrubbed", Run, RunFeedback, Rule, Episode)
SCRUBBED_MODELS: tuple[type[Any], ...] = (Run, RunFeedback, Rule, Episode)


async def tenants_to_scrub(session: AsyncSession, *, rescan: bool) -> list[str]:
    """Every tenant with runs, feedback, rules or episodes the scrub has not checked (any,
    with `rescan`)."""
    selects = []
    for model in SCRUBBED_MODELS:
        stmt = select(model.tenant_id)
        if not rescan:
            stmt = stmt.where(model.scrubbed_at.is_(None))
        selects.append(stmt)
    tenants = union(*selects).subquery()
    rows = await session.execute(select(tenants.c.tenant_id).order_by(tenants.c.tenant_id))
    return [row[0] for row in rows]


async def rows_to_scrub(
    session: AsyncSession,
    model: type[Scrubbed],
    *,
    tenant_id: str,
    after: uuid.UUID | None,
    rescan: bool,
    limit: int,
) -> list[Scrubbed]:
    """The tenant's next `limit` rows of `model` after id `after` that the scrub has not
    checked yet (every one with `rescan`), in id order."""
    stmt = select(model).where(model.tenant_id == tenant_id)
    if after is not None:
        stmt = stmt.where(model.id > after)
    if not rescan:
        stmt = stmt.where(model.scrubbed_at.is_(None))
    return list((await session.execute(stmt.order_by(model.id).limit(limit))).scalars())


async def mark_checked(
    session: AsyncSession, model: type[Any], *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> None:
    """Record that the scrub checked these rows."""
    if ids:
        await session.execute(
            update(model)
            .where(model.tenant_id == tenant_id, model.id.in_(list(ids)))
            .values(scrubbed_at=func.now())
        )


async def rewrite(
    session: AsyncSession,
    model: type[Any],
    *,
    tenant_id: str,
    row_id: uuid.UUID,
    expected: dict[str, Any],
    values: dict[str, Any],
    search_text: str | None = None,
) -> bool:
    """Set `values` (and a tsvector of `search_text`) on the row unless one of the
    `expected` columns changed since it was read; whether it was rewritten."""
    table: Table = model.__table__
    unchanged = [table.c[column].is_not_distinct_from(value) for column, value in expected.items()]
    extra = await search_columns(search_text) if search_text is not None else {}
    stmt = (
        update(table)
        .where(table.c.tenant_id == tenant_id, table.c.id == row_id, *unchanged)
        .values(**values, **extra, scrubbed_at=func.now())
    )
    return bool((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]
