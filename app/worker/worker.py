"""The job worker: claims jobs with FOR UPDATE SKIP LOCKED, runs them, records the outcome."""

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable

from app.core.scope import SYSTEM
from app.models import Job
from app.repositories import jobs as job_rows
from app.services import actors
from app.services.jobs import JobContext, JobOutcome
from app.telemetry.metrics import JOB_SECONDS, JOBS
from app.worker.arc_boundaries import run_arc_boundaries
from app.worker.cleanup import run_episode_cleanup
from app.worker.consolidation.pipeline import run_consolidation
from app.worker.decay import run_decay_sweep
from app.worker.erasure import run_erasure
from app.worker.pii import run_pii_scrub
from app.worker.reflection import run_reflection

logger = logging.getLogger(__name__)

MAX_ERROR_CHARS = 2000
MAX_ERRORS = 100
Handler = Callable[[JobContext, Job], Awaitable[JobOutcome]]


async def _consolidation(ctx: JobContext, job: Job) -> JobOutcome:
    return await run_consolidation(ctx, tenant_id=job.tenant_id, job_id=job.id)


async def _decay(ctx: JobContext, job: Job) -> JobOutcome:
    return await run_decay_sweep(ctx, tenant_id=job.tenant_id, job_id=str(job.id))


async def _cleanup(ctx: JobContext, job: Job) -> JobOutcome:
    max_entries = int(job.params.get("max_entries", ctx.settings.jobs.cleanup_max_entries))
    return await run_episode_cleanup(
        ctx, tenant_id=job.tenant_id, max_entries=max_entries, job_id=str(job.id)
    )


async def _erasure(ctx: JobContext, job: Job) -> JobOutcome:
    assert job.tenant_id is not None, "erasures are always a tenant's"
    return await run_erasure(ctx, tenant_id=job.tenant_id, job_id=job.id, params=job.params)


async def _pii_scrub(ctx: JobContext, job: Job) -> JobOutcome:
    return await run_pii_scrub(
        ctx, tenant_id=job.tenant_id, rescan=bool(job.params.get("rescan", False))
    )


async def _reflection(ctx: JobContext, job: Job) -> JobOutcome:
    if job.tenant_id is None:
        return JobOutcome(result={}, errors=["a reflection job needs a tenant"], failed=True)
    return await run_reflection(
        ctx,
        tenant_id=job.tenant_id,
        ledger=str(job.params["ledger"]),
        agent_id=str(job.params["agent_id"]),
    )


async def _arc_boundaries(ctx: JobContext, job: Job) -> JobOutcome:
    assert job.tenant_id is not None  # queued through the API only, for one tenant
    return await run_arc_boundaries(
        ctx,
        tenant_id=job.tenant_id,
        scope=job.params["scope"],
        gap_minutes=job.params.get("gap_minutes"),
    )


HANDLERS: dict[str, Handler] = {
    "consolidation": _consolidation,
    "decay": _decay,
    "cleanup": _cleanup,
    "erasure": _erasure,
    "pii_scrub": _pii_scrub,
    "reflection": _reflection,
    "arc_boundaries": _arc_boundaries,
}


async def claim(ctx: JobContext) -> Job | None:
    """Fail abandoned jobs, then claim the oldest claimable one (None when the queue is empty)."""
    settings = ctx.settings.jobs
    async with ctx.transaction(SYSTEM) as session:
        await job_rows.fail_abandoned(session, max_attempts=settings.max_job_attempts)
        return await job_rows.claim_next(
            session,
            worker_id=ctx.worker_id,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_job_attempts,
        )


async def run_once(ctx: JobContext) -> Job | None:
    """Claim one job and run it to its end; the claimed job, or None when there was none."""
    job = await claim(ctx)
    if job is None:
        return None
    logger.info("job %s (%s) started on %s", job.id, job.kind, ctx.worker_id)
    started = time.perf_counter()
    heartbeat = asyncio.create_task(_keep_lease(ctx, job))
    try:
        with actors.acting_as(actors.for_job(job.id, job.actor_key_id)):
            outcome = await HANDLERS[job.kind](ctx, job)
    except asyncio.CancelledError:
        await asyncio.shield(_release(ctx, job))
        raise
    except Exception as exc:  # noqa: BLE001 - recorded on the job
        logger.exception("job %s (%s) failed", job.id, job.kind)
        outcome = JobOutcome(
            result={}, errors=[f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]], failed=True
        )
    finally:
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeat
    status = "failed" if outcome.failed else "succeeded"
    async with ctx.transaction(SYSTEM) as session:
        await job_rows.finish(
            session,
            job_id=job.id,
            worker_id=ctx.worker_id,
            status=status,
            result=outcome.result,
            errors=bounded_errors(outcome.errors),
        )
    logger.info("job %s (%s) %s", job.id, job.kind, status)
    JOBS.labels(job.kind, status).inc()
    JOB_SECONDS.labels(job.kind).observe(time.perf_counter() - started)
    return job


def bounded_errors(errors: list[str]) -> list[str]:
    """The first MAX_ERRORS errors, and how many more there were."""
    if len(errors) <= MAX_ERRORS:
        return errors
    return [*errors[:MAX_ERRORS], f"... and {len(errors) - MAX_ERRORS} more error(s)"]


async def drain(ctx: JobContext) -> int:
    """Run jobs until the queue is empty; how many ran."""
    count = 0
    while await run_once(ctx) is not None:
        count += 1
    return count


# A worker silent for this many heartbeats is dead.
STALE_HEARTBEATS = 3


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_dead(
    row: job_rows.WorkerRow, *, me: str, hostname: str, pid: int, heartbeat_seconds: float
) -> bool:
    """A worker is dead when its heartbeat is stale, or when it ran on this host in a process
    that no longer exists (or that is this very process: an earlier incarnation of it)."""
    if row.id == me:
        return False
    if row.silent_seconds > STALE_HEARTBEATS * heartbeat_seconds:
        return True
    return row.hostname == hostname and (row.pid == pid or not _pid_alive(row.pid))


async def start_up(ctx: JobContext) -> int:
    """Register this worker and end the leases of dead workers' running jobs at once; how
    many jobs were reclaimed."""
    hostname, pid = socket.gethostname(), os.getpid()
    async with ctx.transaction(SYSTEM) as session:
        await job_rows.register_worker(session, worker_id=ctx.worker_id, hostname=hostname, pid=pid)
        dead = [
            row.id
            for row in await job_rows.list_workers(session)
            if is_dead(
                row,
                me=ctx.worker_id,
                hostname=hostname,
                pid=pid,
                heartbeat_seconds=ctx.settings.jobs.heartbeat_seconds,
            )
        ]
        reclaimed = await job_rows.expire_leases_of(session, worker_ids=dead)
    if reclaimed:
        logger.warning(
            "job worker %s: reclaimed %d job(s) of dead worker(s) %s",
            ctx.worker_id,
            reclaimed,
            ", ".join(dead),
        )
    return reclaimed


async def _heartbeat(ctx: JobContext) -> None:
    while True:
        await asyncio.sleep(ctx.settings.jobs.heartbeat_seconds)
        try:
            async with ctx.transaction(SYSTEM) as session:
                await job_rows.heartbeat(session, worker_id=ctx.worker_id)
        except Exception:  # noqa: BLE001 - the next heartbeat may succeed
            logger.warning("job worker %s: heartbeat failed", ctx.worker_id, exc_info=True)


async def run_worker(ctx: JobContext, stop: asyncio.Event) -> None:
    """Register (reclaiming dead workers' jobs), drain the queue, then poll every
    `jobs.poll_interval_seconds` until `stop` is set; a heartbeat runs alongside."""
    logger.info("job worker %s started", ctx.worker_id)
    try:
        await start_up(ctx)
    except Exception:  # noqa: BLE001 - the database may be away; leases still expire
        logger.exception("job worker %s: registration failed", ctx.worker_id)
    beating = asyncio.create_task(_heartbeat(ctx))
    try:
        await _poll(ctx, stop)
    finally:
        beating.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beating
        with contextlib.suppress(Exception):
            async with ctx.transaction(SYSTEM) as session:
                await job_rows.unregister_worker(session, worker_id=ctx.worker_id)


async def _poll(ctx: JobContext, stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            while not stop.is_set() and await run_once(ctx) is not None:
                pass
        except Exception:  # noqa: BLE001 - the database may be away; try again later
            logger.exception("job worker %s: claiming failed", ctx.worker_id)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=ctx.settings.jobs.poll_interval_seconds)
    logger.info("job worker %s stopped", ctx.worker_id)


async def _keep_lease(ctx: JobContext, job: Job) -> None:
    interval = ctx.settings.jobs.lease_seconds / 3
    while True:
        await asyncio.sleep(interval)
        try:
            async with ctx.transaction(SYSTEM) as session:
                await job_rows.renew_lease(
                    session,
                    job_id=job.id,
                    worker_id=ctx.worker_id,
                    lease_seconds=ctx.settings.jobs.lease_seconds,
                )
        except Exception:  # noqa: BLE001 - the next renewal may succeed
            logger.warning("job %s: lease renewal failed", job.id, exc_info=True)


async def _release(ctx: JobContext, job: Job) -> None:
    try:
        async with ctx.transaction(SYSTEM) as session:
            await job_rows.release(session, job_id=job.id, worker_id=ctx.worker_id)
    except Exception:  # noqa: BLE001 - the lease expires and another worker takes it
        logger.warning("job %s: could not release it on shutdown", job.id, exc_info=True)


class BackgroundJobs:
    """The worker and scheduler tasks of this process, started and stopped with the app."""

    SHUTDOWN_GRACE_SECONDS = 10.0

    def __init__(self, ctx: JobContext) -> None:
        self._ctx = ctx
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> "BackgroundJobs":
        """Start the tasks `jobs.worker_enabled` and `jobs.scheduler_enabled` ask for."""
        from app.worker.scheduler import run_scheduler

        if self._ctx.settings.jobs.worker_enabled:
            self._tasks.append(
                asyncio.create_task(run_worker(self._ctx, self._stop), name="engram-job-worker")
            )
        if self._ctx.settings.jobs.scheduler_enabled:
            self._tasks.append(
                asyncio.create_task(
                    run_scheduler(self._ctx, self._stop), name="engram-job-scheduler"
                )
            )
        return self

    async def stop(self) -> None:
        """Ask the tasks to stop; a job still running after the grace period is released."""
        self._stop.set()
        if not self._tasks:
            return
        _, pending = await asyncio.wait(self._tasks, timeout=self.SHUTDOWN_GRACE_SECONDS)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
