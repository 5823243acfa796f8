"""The append-only audit stream and rule applications."""

import uuid
from typing import Any

from sqlalchemy import insert, select
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


async def harmful_reasons(session: AsyncSession, *, tenant_id: str,
                          rule_id: uuid.UUID) -> list[str]:
    """The non-empty reasons of a rule's harmful marks, oldest first."""
    stmt = (select(RuleApplication.reason)
            .where(RuleApplication.tenant_id == tenant_id, RuleApplication.rule_id == rule_id,
                   RuleApplication.outcome == "harmful", RuleApplication.reason.is_not(None),
                   RuleApplication.reason != "")
            .order_by(RuleApplication.created_at, RuleApplication.id))
    return [reason for reason in (await session.execute(stmt)).scalars() if reason]
