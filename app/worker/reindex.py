"""Rebuild the keyword text of every episode of a session after `keyword_context` or
`embedding_context_turns` changed."""

from collections import defaultdict

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.scope import SYSTEM, scoped_transaction
from app.repositories import episodes as episode_rows
from app.services.episodes import refresh_keyword_text

BATCH_SIZE = 500


async def reindex_all(
    sessionmaker: async_sessionmaker[AsyncSession], *, context_turns: int, keyword_context: bool
) -> int:
    """Rebuild every session episode's keyword text (every tenant: system work), one
    committed batch at a time; the number of episodes."""
    done, after = 0, None
    while True:
        async with scoped_transaction(sessionmaker, SYSTEM) as session:
            rows = await episode_rows.session_episodes(session, after=after, limit=BATCH_SIZE)
            if not rows:
                return done
            by_tenant = defaultdict(list)
            for episode_id, tenant_id in rows:
                by_tenant[tenant_id].append(episode_id)
            for tenant_id, ids in by_tenant.items():
                await refresh_keyword_text(
                    session,
                    tenant_id=tenant_id,
                    ids=ids,
                    context_turns=context_turns,
                    keyword_context=keyword_context,
                )
        done += len(rows)
        after = rows[-1][0]
