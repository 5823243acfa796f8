"""Place episodes stored without a session_id before sessions were inferred at ingest (or
while inference was off) in the sessions the gap rule gives them."""

from collections import defaultdict

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.scope import SYSTEM, scoped_transaction
from app.repositories import episodes as episode_rows
from app.services.episodes import gap_sessions

BATCH_SIZE = 2000


async def infer_missing_sessions(
    sessionmaker: async_sessionmaker[AsyncSession], *, gap_minutes: float
) -> int:
    """Give every episode with neither a session_id nor an inferred session the session the
    gap rule gives it (every tenant: system work), oldest first per butler, one committed
    batch at a time; the number of episodes placed (0 when `gap_minutes` is 0)."""
    if gap_minutes <= 0:
        return 0
    done = 0
    while True:
        async with scoped_transaction(sessionmaker, SYSTEM) as session:
            rows = await episode_rows.unplaced_episodes(session, limit=BATCH_SIZE)
            if not rows:
                return done
            by_tenant = defaultdict(list)
            for row in rows:
                by_tenant[row.tenant_id].append(row)
            for tenant_id, episodes in by_tenant.items():
                # Earlier batches are stored by now, so each batch chains on to the last.
                sessions = await gap_sessions(
                    session,
                    tenant_id=tenant_id,
                    points=[(episode.butler, episode.occurred_at) for episode in episodes],
                    gap_minutes=gap_minutes,
                )
                await episode_rows.place_episodes(
                    session,
                    tenant_id=tenant_id,
                    ids=[episode.id for episode in episodes],
                    sessions=sessions,
                )
        done += len(rows)
