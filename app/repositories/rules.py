"""SQL particular to rules: the listing."""

from dataclasses import dataclass

from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Rule
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
