"""The append-only audit stream and rule applications."""

import uuid
from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import MemoryEvent, RuleApplication


async def add_events(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Append many memory_events rows in one statement."""
    if rows:
        await session.execute(insert(MemoryEvent), rows)


async def add_rule_application(session: AsyncSession, *, tenant_id: str, rule_id: uuid.UUID,
                               outcome: str, reason: str | None,
                               context: dict[str, Any]) -> None:
    """Record one helpful/harmful application of a rule."""
    await session.execute(
        insert(RuleApplication).values(tenant_id=tenant_id, rule_id=rule_id, outcome=outcome,
                                       reason=reason, context=context)
    )
