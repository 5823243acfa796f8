"""Erasure: a durable job deleting everything a selector matches, batch by batch.

1. `services/erasures.request_erasure` checks the request (a whole tenant needs `confirm` =
   the tenant id; an entity must exist) and queues an `erasure` job whose params hold the
   selector.
2. `run_erasure` erases facts (with their whole histories), rules, procedures (with every
   version), runs (with their messages and feedback), episodes, then entities,
   each batch in one transaction that also writes the batch's content-free tombstone event
   (`memories_erased`: type and ids) and adds the batch's counts to the job's progress. A
   failed or interrupted job is claimed again and selects what is left: nothing is half
   done, nothing is done twice, and the counts add up across attempts.
3. A whole tenant then loses its runs (with their messages and feedback), agent ledgers
   (with the reflections' read marks), procedures, arcs and working memories, batch by
   batch with tombstones, then its remaining events (the tombstones stay), links, keyword
   statistics and other finished or queued jobs.
4. The last transaction writes `erasure_completed` (the selector's name and the counts),
   and replaces the job's params by the selector's name: the values asked for (a subject,
   a butler) are content too. The job's result is the receipt: counts per table.
"""

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.scope import Scope
from app.repositories import erasure as erasure_rows
from app.repositories import jobs as job_rows
from app.repositories.erasure import Counts
from app.repositories.erasure_batches import ErasureSelector
from app.schemas.erasures import SELECTORS
from app.services import erasures, events
from app.services.jobs import JobContext, JobOutcome

# A safety stop: at most this many batches per phase in one attempt.
MAX_BATCHES = 1_000_000


def _add(total: Counts, counts: Counts) -> None:
    for table, count in counts.items():
        total[table] = total.get(table, 0) + count


async def _entity_family(ctx: JobContext, tenant_id: str, sel: ErasureSelector) -> ErasureSelector:
    if not sel.entity_ids:
        return sel
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        family = await erasure_rows.entity_family(session, tenant_id=tenant_id, ids=sel.entity_ids)
    return ErasureSelector(entity_ids=tuple(family) or sel.entity_ids)


async def run_erasure(
    ctx: JobContext, *, tenant_id: str, job_id: uuid.UUID, params: dict[str, Any]
) -> JobOutcome:
    """Erase what the job's selector matches (see the module docstring); the receipt."""
    if set(params) == {"selector"}:
        # Finished in an earlier attempt whose worker died before recording the outcome.
        async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=str(job_id))) as session:
            receipt = await job_rows.progress_of(session, job_id=job_id)
        return JobOutcome(result={"selector": params["selector"], "deleted": receipt})
    sel = await _entity_family(ctx, tenant_id, erasures.selector(params))
    batch_size = ctx.settings.jobs.erasure_batch_size
    for memory_type, select, erase in erasures.PHASES:
        for _ in range(MAX_BATCHES):
            async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=str(job_id))) as session:
                ids = await select(session, tenant_id=tenant_id, sel=sel, limit=batch_size)
                if not ids:
                    break
                erased, counts = await erase(session, tenant_id, ids)
                await _record_batch(session, tenant_id, job_id, memory_type, erased, counts)
    if sel.whole_tenant:
        await _erase_tenant_rest(ctx, tenant_id=tenant_id, job_id=job_id, batch_size=batch_size)
    selector = next(name for name in SELECTORS if params.get(name))
    async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=str(job_id))) as session:
        receipt = await job_rows.progress_of(session, job_id=job_id)
        await events.record(
            session,
            [
                events.Event(
                    "erasure_completed",
                    tenant_id,
                    {"job_id": str(job_id), "selector": selector, "counts": receipt},
                )
            ],
        )
        await job_rows.replace_params(session, job_id=job_id, params={"selector": selector})
    return JobOutcome(result={"selector": selector, "deleted": receipt})


async def _record_batch(
    session: AsyncSession,
    tenant_id: str,
    job_id: uuid.UUID,
    memory_type: str,
    erased: Sequence[uuid.UUID],
    counts: Counts,
) -> None:
    """One `memories_erased` event for a batch, and its counts added to the job's progress."""
    await events.record(
        session,
        [
            events.Event(
                "memories_erased",
                tenant_id,
                {
                    "job_id": str(job_id),
                    "memory_type": memory_type,
                    "memory_ids": [str(i) for i in erased],
                },
            )
        ],
    )
    await job_rows.add_progress(session, job_id=job_id, counts={**counts, "batches": 1})


async def _erase_tenant_rest(
    ctx: JobContext, *, tenant_id: str, job_id: uuid.UUID, batch_size: int
) -> None:
    for table, record_type in erasure_rows.TENANT_RECORDS.items():
        for _ in range(MAX_BATCHES):
            async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=str(job_id))) as session:
                ids = await erasure_rows.delete_tenant_records(
                    session, tenant_id=tenant_id, table=table, limit=batch_size
                )
                if not ids:
                    break
                await _record_batch(session, tenant_id, job_id, record_type, ids, {table: len(ids)})
    for _ in range(MAX_BATCHES):
        async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=str(job_id))) as session:
            deleted = await erasure_rows.delete_tenant_events(
                session, tenant_id=tenant_id, limit=batch_size
            )
            await job_rows.add_progress(
                session, job_id=job_id, counts={"memory_events_deleted": deleted}
            )
        if deleted < batch_size:
            break
    async with ctx.transaction(Scope(tenant_id=tenant_id, job_id=str(job_id))) as session:
        counts = await erasure_rows.delete_tenant_leftovers(session, tenant_id=tenant_id)
        counts["jobs"] = await job_rows.delete_tenant_jobs(
            session, tenant_id=tenant_id, keep=job_id
        )
        await job_rows.add_progress(session, job_id=job_id, counts=counts)
