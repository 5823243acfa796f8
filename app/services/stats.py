"""Memory stats for system health monitoring."""

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.scope import SYSTEM, scoped_transaction
from app.repositories import stats as stats_rows
from app.schemas.stats import EpisodeStats, FactStats, RuleStats, StatsOut

CONSOLIDATION_OFF = (
    "consolidation is not configured ([llm] base_url is unset): episodes are "
    "never turned into facts or rules, and cleanup deletes expired episodes "
    "unconsolidated once unconsolidated_grace_days have passed"
)


async def memory_stats(
    session: AsyncSession, *, tenant_id: str, scope: str | None, consolidation_configured: bool
) -> StatsOut:
    """Counts by lifecycle state; a scope narrows facts and rules to it and 'global'."""
    episodes = await stats_rows.episode_counts(session, tenant_id=tenant_id, butler=scope)
    facts = await stats_rows.fact_counts(session, tenant_id=tenant_id, scope=scope)
    rules = await stats_rows.rule_counts(session, tenant_id=tenant_id, scope=scope)
    return StatsOut(
        scope=scope,
        episodes=EpisodeStats(**episodes),
        facts=FactStats(**facts),
        rules=RuleStats(**rules),
        consolidation_configured=consolidation_configured,
        warnings=[] if consolidation_configured else [CONSOLIDATION_OFF],
    )


async def consolidation_backlog(sessionmaker: async_sessionmaker[AsyncSession]) -> dict[str, int]:
    """Episodes of every tenant waiting for consolidation: 'pending' and 'failed' counts."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        counts = await stats_rows.awaiting_consolidation(session)
    return {status: counts.get(status, 0) for status in ("pending", "failed")}
