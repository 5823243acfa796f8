"""SQL particular to rules: the listing, a new rule, feedback."""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.formulas.lifecycle import FeedbackOutcome
from app.models import Rule
from app.repositories import memories as memory_rows
from app.repositories import pagination
from app.repositories.filters import equal
from app.repositories.memory_filters import compile_filter
from app.schemas.filters import MemoryFilter


@dataclass(frozen=True)
class RuleFilters:
    """What a rule listing keeps; None means any."""

    scope: str | None = None
    maturity: str | None = None
    include_forgotten: bool = False
    memory_filter: MemoryFilter | None = None


def not_forgotten() -> ColumnElement[bool]:
    """Rules not forgotten."""
    return Rule.forgotten_at.is_(None)


async def list_rules(
    session: AsyncSession, *, tenant_id: str, filters: RuleFilters, limit: int, cursor: str | None
) -> tuple[list[Rule], str | None]:
    """A page of the tenant's rules matching `filters`, newest first."""
    stmt = select(Rule).where(
        Rule.tenant_id == tenant_id,
        *equal(Rule, filters, "scope", "maturity"),
        *compile_filter("rule", filters.memory_filter),
    )
    if not filters.include_forgotten:
        stmt = stmt.where(not_forgotten())
    return await pagination.list_page(
        session, stmt, order=(Rule.created_at, Rule.id), limit=limit, cursor=cursor
    )


async def insert_rule(session: AsyncSession, row: dict[str, Any]) -> Rule:
    """Insert a new rule (its columns, with a `search_text`), confirmed now."""
    [rule] = await memory_rows.insert_rows(session, Rule, [row], last_confirmed_at=func.now())
    return rule


async def apply_feedback(
    session: AsyncSession,
    *,
    tenant_id: str,
    rule_id: uuid.UUID,
    outcome: FeedbackOutcome,
    needs_inversion: bool,
) -> Rule:
    """Write a helpful or harmful mark's counters, score and maturity, applied and evaluated
    now."""
    return await memory_rows.update_row(
        session,
        Rule,
        tenant_id=tenant_id,
        memory_id=rule_id,
        values={
            "applied_count": outcome.applied_count,
            "success_count": outcome.success_count,
            "harmful_count": outcome.harmful_count,
            "effectiveness_score": outcome.effectiveness_score,
            "maturity": outcome.maturity,
            "last_applied_at": func.now(),
            "last_evaluated_at": func.now(),
            "needs_inversion": needs_inversion,
        },
    )
