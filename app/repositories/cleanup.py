"""Episode cleanup SQL: bounded batches of deletions, their links, and a summary event."""

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# Deletes a batch of one tenant's episodes, the memory_links rows touching them, and appends
# one memory_events row summarising the batch (with the ids of the episodes deleted
# without ever being consolidated). {victims} selects the batch and locks it. The links go
# by the victims, before the episodes: Citus runs each CTE as a statement of its own, and the
# episodes' delete trigger would otherwise remove them uncounted.
_DELETE_BATCH = """
WITH victims AS (
    {victims}
),
links_as_target AS (
    DELETE FROM memory_links l USING victims v
    WHERE l.tenant_id = CAST(:tenant_id AS text) AND l.target_type = 'episode'
      AND l.target_id = v.id
    RETURNING 1
),
links_as_source AS (
    DELETE FROM memory_links l USING victims v
    WHERE l.tenant_id = CAST(:tenant_id AS text) AND l.source_type = 'episode'
      AND l.source_id = v.id
    RETURNING 1
),
deleted AS (
    DELETE FROM episodes e USING victims v
    WHERE e.tenant_id = CAST(:tenant_id AS text) AND e.id = v.id
    RETURNING e.id, e.tenant_id, e.consolidated
),
logged AS (
    INSERT INTO memory_events (event_type, actor, actor_key_id, tenant_id, payload)
    SELECT 'episodes_deleted', 'episode_cleanup', CAST(:actor_key_id AS uuid), d.tenant_id,
           jsonb_build_object('reason', CAST(:reason AS text), 'count', count(*),
                              'job_id', CAST(:job_id AS text),
                              'unconsolidated', count(*) FILTER (WHERE NOT d.consolidated),
                              'unconsolidated_episode_ids',
                              coalesce(jsonb_agg(d.id) FILTER (WHERE NOT d.consolidated),
                                       '[]'::jsonb))
    FROM deleted d GROUP BY d.tenant_id
    RETURNING 1
)
SELECT (SELECT count(*) FROM deleted) AS episodes,
       (SELECT count(*) FROM links_as_target) + (SELECT count(*) FROM links_as_source) AS links
"""

# TTL deletes only what is safe to lose: consolidated episodes and explicitly forgotten ones.
# An expired episode that was never consolidated stays until consolidation takes it (so nothing
# is lost silently).
_EXPIRED = """expires_at < now() AND (consolidated OR forgotten_at IS NOT NULL)"""

EXPIRED_BATCH = _DELETE_BATCH.format(
    victims=f"""
    SELECT id FROM episodes
    WHERE {_EXPIRED}
      AND tenant_id = CAST(:tenant_id AS text)
    LIMIT :batch_size
    FOR UPDATE SKIP LOCKED
"""
)

# An expired episode never consolidated nor forgotten goes `grace_seconds` after it expired
# (unconsolidated_grace_days): without an LLM nothing is consolidated, and storage must end.
# The cleanup job runs this only when no LLM is configured.
GRACE_BATCH = _DELETE_BATCH.format(
    victims="""
    SELECT id FROM episodes
    WHERE expires_at < now() - make_interval(secs => CAST(:grace_seconds AS double precision))
      AND NOT consolidated AND forgotten_at IS NULL
      AND tenant_id = CAST(:tenant_id AS text)
    LIMIT :batch_size
    FOR UPDATE SKIP LOCKED
"""
)

# Capacity deletes consolidated episodes, oldest first, of one tenant.
CAPACITY_BATCH = _DELETE_BATCH.format(
    victims="""
    SELECT id FROM episodes
    WHERE tenant_id = CAST(:tenant_id AS text) AND consolidated
    ORDER BY created_at, id
    LIMIT :batch_size
    FOR UPDATE SKIP LOCKED
"""
)

# Then, still over capacity, expired unconsolidated ones, oldest first; an episode that has
# not expired is never deleted for capacity.
CAPACITY_EXPIRED_BATCH = _DELETE_BATCH.format(
    victims="""
    SELECT id FROM episodes
    WHERE tenant_id = CAST(:tenant_id AS text) AND NOT consolidated AND expires_at < now()
    ORDER BY created_at, id
    LIMIT :batch_size
    FOR UPDATE SKIP LOCKED
"""
)


async def delete_batch(
    session: AsyncSession,
    statement: str,
    *,
    tenant_id: str,
    batch_size: int,
    reason: str,
    job_id: str | None,
    actor_key_id: uuid.UUID | None = None,
    grace_seconds: float = 0.0,
) -> tuple[int, int]:
    """Run one batch; (episodes deleted, links deleted). Its event names `actor_key_id`."""
    row = (
        await session.execute(
            text(statement),
            {
                "tenant_id": tenant_id,
                "batch_size": batch_size,
                "reason": reason,
                "job_id": job_id,
                "actor_key_id": actor_key_id,
                "grace_seconds": grace_seconds,
            },
        )
    ).one()
    return int(row.episodes), int(row.links)


async def tenants_with_episodes(session: AsyncSession) -> list[str]:
    """Every tenant that holds at least one episode."""
    rows = await session.execute(text("SELECT DISTINCT tenant_id FROM episodes ORDER BY 1"))
    return [row[0] for row in rows]


async def count_expired_kept(session: AsyncSession, *, tenant_id: str | None) -> int:
    """Expired episodes kept because they were neither consolidated nor forgotten (waiting
    for consolidation, or without an LLM within their grace period)."""
    stmt = text(
        "SELECT count(*) FROM episodes WHERE expires_at < now() AND NOT consolidated "
        "AND forgotten_at IS NULL AND (CAST(:tenant_id AS text) IS NULL "
        "OR tenant_id = CAST(:tenant_id AS text))"
    )
    return int((await session.execute(stmt, {"tenant_id": tenant_id})).scalar_one())


async def count_episodes(session: AsyncSession, *, tenant_id: str | None) -> int:
    """Episodes of one tenant, or of every tenant when None."""
    stmt = text(
        "SELECT count(*) FROM episodes WHERE CAST(:tenant_id AS text) IS NULL "
        "OR tenant_id = CAST(:tenant_id AS text)"
    )
    return int((await session.execute(stmt, {"tenant_id": tenant_id})).scalar_one())
