"""Cleanup: TTL expiry of consolidated or forgotten episodes, then the capacity limit on
consolidated episodes only, then expired working memories."""

import uuid

from app.repositories import cleanup as cleanup_rows
from app.repositories import jobs as job_rows
from app.repositories import working_memory as working_memory_rows
from app.scope import SYSTEM, Scope
from app.services import actors
from app.services.jobs import JobContext, JobOutcome

# A safety stop: at most this many batches per phase and tenant in one job.
MAX_BATCHES = 100_000


async def run_episode_cleanup(ctx: JobContext, *, tenant_id: str | None, max_entries: int,
                              job_id: str | None = None) -> JobOutcome:
    """Delete expired episodes that were consolidated or forgotten, then the oldest
    consolidated ones above `max_entries`.

    Each batch of `jobs.cleanup_batch_size` rows is its own transaction, so a large backlog
    never holds one long lock. The limit applies per tenant. An episode that was never
    consolidated is deleted only after an explicit forget: expired ones are kept (and
    counted as `expired_kept_unconsolidated`) until consolidation takes them.
    """
    batch_size = ctx.settings.jobs.cleanup_batch_size
    async with ctx.transaction(SYSTEM) as session:
        tenants = ([tenant_id] if tenant_id is not None
                   else await cleanup_rows.tenants_with_episodes(session))
    expired_deleted = capacity_deleted = links_deleted = 0
    for tenant in tenants:
        deleted, links = await _drain(ctx, cleanup_rows.EXPIRED_BATCH, tenant_id=tenant,
                                      batch_size=batch_size, limit=None, reason="expired",
                                      job_id=job_id)
        expired_deleted += deleted
        links_deleted += links
        async with ctx.transaction(Scope(tenant_id=tenant)) as session:
            excess = await cleanup_rows.count_episodes(session, tenant_id=tenant) - max_entries
        if excess > 0:
            deleted, links = await _drain(ctx, cleanup_rows.CAPACITY_BATCH, tenant_id=tenant,
                                          batch_size=batch_size, limit=excess,
                                          reason="capacity", job_id=job_id)
            capacity_deleted += deleted
            links_deleted += links
    final = SYSTEM if tenant_id is None else Scope(tenant_id=tenant_id, job_id=job_id)
    working_memories_deleted = await _drain_working_memories(
        ctx, scope=final, tenant_id=tenant_id, batch_size=batch_size, job_id=job_id)
    async with ctx.transaction(final) as session:
        remaining = await cleanup_rows.count_episodes(session, tenant_id=tenant_id)
        kept = await cleanup_rows.count_expired_kept(session, tenant_id=tenant_id)
        if job_id is not None:
            # Earlier attempts' deletions were committed with their counts: report them all.
            done = await job_rows.progress_of(session, job_id=uuid.UUID(job_id))
            expired_deleted = done.get("expired_deleted", expired_deleted)
            capacity_deleted = done.get("capacity_deleted", capacity_deleted)
            links_deleted = done.get("links_deleted", links_deleted)
            working_memories_deleted = done.get("working_memories_deleted",
                                                working_memories_deleted)
    return JobOutcome(result={
        "expired_deleted": expired_deleted,
        "expired_kept_unconsolidated": kept,
        "capacity_deleted": capacity_deleted,
        "remaining": remaining,
        "links_deleted": links_deleted,
        "max_entries": max_entries,
        "working_memories_deleted": working_memories_deleted,
    })


async def _drain(ctx: JobContext, statement: str, *, tenant_id: str, batch_size: int,
                 limit: int | None, reason: str, job_id: str | None) -> tuple[int, int]:
    """Delete batch after batch (one transaction each) until none is left or `limit` is met."""
    episodes_total = links_total = 0
    for _ in range(MAX_BATCHES):
        size = batch_size if limit is None else min(batch_size, limit - episodes_total)
        if size <= 0:
            break
        async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=job_id)) as session:
            episodes, links = await cleanup_rows.delete_batch(
                session, statement, tenant_id=tenant_id, batch_size=size, reason=reason,
                job_id=job_id, actor_key_id=actors.current().key_id)
            if job_id is not None:
                await job_rows.add_progress(session, job_id=uuid.UUID(job_id), counts={
                    f"{reason}_deleted": episodes, "links_deleted": links})
        episodes_total += episodes
        links_total += links
        if episodes < size:
            break
    return episodes_total, links_total


async def _drain_working_memories(ctx: JobContext, *, scope: Scope, tenant_id: str | None,
                                  batch_size: int, job_id: str | None) -> int:
    """Delete expired working memories, a batch per transaction; how many went."""
    total = 0
    for _ in range(MAX_BATCHES):
        async with ctx.transaction(scope) as session:
            deleted = await working_memory_rows.delete_expired_batch(
                session, tenant_id=tenant_id, batch_size=batch_size)
            if job_id is not None and deleted:
                await job_rows.add_progress(session, job_id=uuid.UUID(job_id),
                                            counts={"working_memories_deleted": deleted})
        total += deleted
        if deleted < batch_size:
            break
    return total
