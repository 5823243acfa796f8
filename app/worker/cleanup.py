"""Cleanup: TTL expiry of consolidated or forgotten episodes, expiry of unconsolidated ones
after their grace period when no LLM is configured, then the capacity limit, then expired
working memories, then runs finished longer ago than the run retention."""

import uuid
from dataclasses import dataclass

from app.core.constants import SECONDS_PER_DAY
from app.core.scope import SYSTEM, Scope
from app.repositories import cleanup as cleanup_rows
from app.repositories import erasure as erasure_rows
from app.repositories import jobs as job_rows
from app.repositories import runs as run_rows
from app.repositories import working_memory as working_memory_rows
from app.services import actors, events
from app.services.jobs import JobContext, JobOutcome

# A safety stop: at most this many batches per phase and tenant in one job.
MAX_BATCHES = 100_000


@dataclass(frozen=True)
class Phase:
    """One kind of deletion: its statement, the reason its events give, and the counters of
    the job's result it adds to."""

    statement: str
    reason: str
    counters: tuple[str, ...]


EXPIRED = Phase(cleanup_rows.EXPIRED_BATCH, "expired", ("expired_deleted",))
GRACE = Phase(cleanup_rows.GRACE_BATCH, "unconsolidated_grace", ("unconsolidated_deleted",))
CAPACITY = Phase(cleanup_rows.CAPACITY_BATCH, "capacity", ("capacity_deleted",))
CAPACITY_EXPIRED = Phase(
    cleanup_rows.CAPACITY_EXPIRED_BATCH,
    "capacity_unconsolidated",
    ("capacity_deleted", "capacity_unconsolidated_deleted"),
)
COUNTERS = (
    "expired_deleted",
    "unconsolidated_deleted",
    "capacity_deleted",
    "capacity_unconsolidated_deleted",
    "links_deleted",
)


async def run_episode_cleanup(
    ctx: JobContext, *, tenant_id: str | None, max_entries: int, job_id: str | None = None
) -> JobOutcome:
    """Delete expired episodes that were consolidated or forgotten, then, when no LLM is
    configured, expired ones never consolidated once `unconsolidated_grace_days` have passed
    since they expired, then, above `max_entries`, the oldest consolidated episodes and after
    them the oldest expired unconsolidated ones (an episode that has not expired is never
    deleted for capacity).

    With an LLM configured an unconsolidated episode waits for consolidation however long the
    model stays down: only the capacity limit or a forget removes it unread.

    Each batch of `jobs.cleanup_batch_size` rows is its own transaction, so a large backlog
    never holds one long lock. The limit applies per tenant. Each batch's event lists the
    episodes it deleted without their ever being consolidated.
    """
    batch_size = ctx.settings.jobs.cleanup_batch_size
    grace_seconds = ctx.settings.unconsolidated_grace_days * SECONDS_PER_DAY
    async with ctx.transaction(SYSTEM) as session:
        tenants = (
            [tenant_id]
            if tenant_id is not None
            else await cleanup_rows.tenants_with_episodes(session)
        )
    totals = dict.fromkeys(COUNTERS, 0)
    expiry = (EXPIRED,) if ctx.settings.llm.base_url else (EXPIRED, GRACE)
    for tenant in tenants:
        await _clean_tenant(
            ctx,
            tenant,
            expiry=expiry,
            max_entries=max_entries,
            batch_size=batch_size,
            job_id=job_id,
            grace_seconds=grace_seconds,
            totals=totals,
        )
    final = SYSTEM if tenant_id is None else Scope(tenant_id=tenant_id, job_id=job_id)
    working_memories_deleted = await _drain_working_memories(
        ctx, tenant_id=tenant_id, batch_size=batch_size, job_id=job_id
    )
    runs_deleted = await _drain_runs(ctx, tenant_id=tenant_id, batch_size=batch_size, job_id=job_id)
    async with ctx.transaction(final) as session:
        remaining = await cleanup_rows.count_episodes(session, tenant_id=tenant_id)
        kept = await cleanup_rows.count_expired_kept(session, tenant_id=tenant_id)
        if job_id is not None:
            # Earlier attempts' deletions were committed with their counts: report them all.
            done = await job_rows.progress_of(session, job_id=uuid.UUID(job_id))
            totals = {name: done.get(name, count) for name, count in totals.items()}
            working_memories_deleted = done.get(
                "working_memories_deleted", working_memories_deleted
            )
            runs_deleted = {name: done.get(name, count) for name, count in runs_deleted.items()}
    return JobOutcome(
        result={
            "expired_deleted": totals["expired_deleted"],
            "expired_kept_unconsolidated": kept,
            "unconsolidated_deleted": totals["unconsolidated_deleted"],
            "capacity_deleted": totals["capacity_deleted"],
            "capacity_unconsolidated_deleted": totals["capacity_unconsolidated_deleted"],
            "remaining": remaining,
            "links_deleted": totals["links_deleted"],
            "max_entries": max_entries,
            "working_memories_deleted": working_memories_deleted,
            **runs_deleted,
            "run_retention_days": ctx.settings.runs.retention_days,
        }
    )


async def _clean_tenant(
    ctx: JobContext,
    tenant_id: str,
    *,
    expiry: tuple[Phase, ...],
    max_entries: int,
    batch_size: int,
    job_id: str | None,
    grace_seconds: float,
    totals: dict[str, int],
) -> None:
    """Drain a tenant's `expiry` phases, then the capacity phases while it is above
    `max_entries`; add the counts to `totals`."""
    for phase in expiry:
        await _drain(
            ctx,
            phase,
            tenant_id=tenant_id,
            batch_size=batch_size,
            limit=None,
            job_id=job_id,
            grace_seconds=grace_seconds,
            totals=totals,
        )
    for phase in (CAPACITY, CAPACITY_EXPIRED):
        async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
            excess = await cleanup_rows.count_episodes(session, tenant_id=tenant_id) - max_entries
        if excess > 0:
            await _drain(
                ctx,
                phase,
                tenant_id=tenant_id,
                batch_size=batch_size,
                limit=excess,
                job_id=job_id,
                grace_seconds=grace_seconds,
                totals=totals,
            )


async def _drain(
    ctx: JobContext,
    phase: Phase,
    *,
    tenant_id: str,
    batch_size: int,
    limit: int | None,
    job_id: str | None,
    grace_seconds: float,
    totals: dict[str, int],
) -> None:
    """Delete batch after batch (one transaction each) until none is left or `limit` is met;
    add the counts to `totals`."""
    episodes_total = 0
    for _ in range(MAX_BATCHES):
        size = batch_size if limit is None else min(batch_size, limit - episodes_total)
        if size <= 0:
            break
        async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=job_id)) as session:
            episodes, links = await cleanup_rows.delete_batch(
                session,
                phase.statement,
                tenant_id=tenant_id,
                batch_size=size,
                reason=phase.reason,
                job_id=job_id,
                actor_key_id=actors.current().key_id,
                grace_seconds=grace_seconds,
            )
            counts = {**dict.fromkeys(phase.counters, episodes), "links_deleted": links}
            if job_id is not None:
                await job_rows.add_progress(session, job_id=uuid.UUID(job_id), counts=counts)
        for name, count in counts.items():
            totals[name] += count
        episodes_total += episodes
        if episodes < size:
            break


async def _drain_working_memories(
    ctx: JobContext, *, tenant_id: str | None, batch_size: int, job_id: str | None
) -> int:
    """Delete expired working memories, tenant by tenant, a batch per transaction; how many
    went."""
    async with ctx.transaction(SYSTEM) as session:
        tenants = (
            [tenant_id]
            if tenant_id is not None
            else await working_memory_rows.tenants_with_expired(session)
        )
    total = 0
    for tenant in tenants:
        for _ in range(MAX_BATCHES):
            async with ctx.transaction(Scope(tenant_id=tenant, job_id=job_id)) as session:
                deleted = await working_memory_rows.delete_expired_batch(
                    session, tenant_id=tenant, batch_size=batch_size
                )
                if job_id is not None and deleted:
                    await job_rows.add_progress(
                        session,
                        job_id=uuid.UUID(job_id),
                        counts={"working_memories_deleted": deleted},
                    )
            total += deleted
            if deleted < batch_size:
                break
    return total


RUN_COUNTERS = {
    "runs": "runs_deleted",
    "run_messages": "run_messages_deleted",
    "run_feedback": "run_feedback_deleted",
}


async def _drain_runs(
    ctx: JobContext, *, tenant_id: str | None, batch_size: int, job_id: str | None
) -> dict[str, int]:
    """Delete runs finished more than `runs.retention_days` ago with their messages, feedback,
    links and events, a batch per transaction (each with a `runs_deleted` event naming the
    runs); the counts per kind."""
    totals = dict.fromkeys(RUN_COUNTERS.values(), 0)
    days = ctx.settings.runs.retention_days
    if days == 0:
        return totals
    seconds = days * SECONDS_PER_DAY
    async with ctx.transaction(SYSTEM) as session:
        tenants = (
            [tenant_id]
            if tenant_id is not None
            else await run_rows.tenants_with_runs_finished_before(session, seconds=seconds)
        )
    for tenant in tenants:
        for _ in range(MAX_BATCHES):
            async with ctx.transaction(Scope(tenant_id=tenant, job_id=job_id)) as session:
                ids = await run_rows.runs_finished_before(
                    session, tenant_id=tenant, seconds=seconds, limit=batch_size
                )
                if not ids:
                    break
                deleted = await erasure_rows.delete_runs(session, tenant_id=tenant, ids=ids)
                counts = {name: deleted.get(table, 0) for table, name in RUN_COUNTERS.items()}
                await events.record(
                    session,
                    [
                        events.Event(
                            "runs_deleted",
                            tenant,
                            {
                                "reason": "retention",
                                "job_id": job_id,
                                "run_ids": [str(i) for i in ids],
                            },
                        )
                    ],
                )
                if job_id is not None:
                    await job_rows.add_progress(session, job_id=uuid.UUID(job_id), counts=counts)
            for name, count in counts.items():
                totals[name] += count
            if len(ids) < batch_size:
                break
    return totals
