"""A rule as it is shown: its row and the reasons of its harmful marks.

The reasons are kept once, with each harmful application (rule_applications); a rule's
response shows them, oldest first, as `metadata.harmful_reasons`.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Rule
from app.repositories import events as event_rows


@dataclass(frozen=True)
class ShownRule:
    """A rule row and the reasons of its harmful marks, oldest first."""

    row: Rule
    harmful_reasons: list[str]


async def shown(session: AsyncSession, *, tenant_id: str, rows: Sequence[Rule]) -> list[ShownRule]:
    """The rules with their harmful reasons, read in one statement."""
    reasons = await event_rows.harmful_reasons(
        session, tenant_id=tenant_id, rule_ids=[row.id for row in rows]
    )
    return [ShownRule(row, reasons.get(row.id, [])) for row in rows]


async def shown_one(session: AsyncSession, *, tenant_id: str, row: Rule) -> ShownRule:
    """One rule with its harmful reasons."""
    [rule] = await shown(session, tenant_id=tenant_id, rows=[row])
    return rule
