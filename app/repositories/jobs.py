"""The jobs table: enqueue, claim with FOR UPDATE SKIP LOCKED, lease renewal, finish."""

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, func, literal, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Job, Worker
from app.repositories import pagination
from app.repositories.filters import equal


async def enqueue(
    session: AsyncSession,
    *,
    tenant_id: str | None,
    kind: str,
    params: dict[str, Any],
    actor_key_id: uuid.UUID | None = None,
) -> Job:
    """Insert a queued job and return it."""
    stmt = (
        insert(Job)
        .values(tenant_id=tenant_id, kind=kind, params=params, actor_key_id=actor_key_id)
        .returning(Job)
    )
    return (await session.execute(stmt)).scalar_one()


async def enqueue_scheduled(
    session: AsyncSession, *, kind: str, params: dict[str, Any], scheduled_for: datetime
) -> Job | None:
    """Insert the system job of one scheduler slot; None when a replica already did."""
    stmt = (
        insert(Job)
        .values(tenant_id=None, kind=kind, params=params, scheduled_for=scheduled_for)
        .on_conflict_do_nothing(
            index_elements=["kind", "scheduled_for"], index_where=text("scheduled_for IS NOT NULL")
        )
        .returning(Job)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def get(session: AsyncSession, *, tenant_id: str, job_id: uuid.UUID) -> Job | None:
    """One job of the tenant."""
    stmt = select(Job).where(Job.id == job_id, Job.tenant_id == tenant_id)
    return (await session.execute(stmt)).scalar_one_or_none()


@dataclass(frozen=True)
class JobFilters:
    """What a job listing keeps; None means any."""

    kind: str | None = None
    status: str | None = None


async def list_jobs(
    session: AsyncSession, *, tenant_id: str, filters: JobFilters, limit: int, cursor: str | None
) -> tuple[list[Job], str | None]:
    """A page of the tenant's jobs matching `filters`, newest first."""
    stmt = select(Job).where(Job.tenant_id == tenant_id, *equal(Job, filters, "kind", "status"))
    return await pagination.list_page(
        session, stmt, order=(Job.created_at, Job.id), limit=limit, cursor=cursor
    )


async def recent_scheduled(session: AsyncSession, *, limit: int) -> list[Job]:
    """The scheduler's newest system jobs (they serve every tenant), newest first."""
    stmt = (
        select(Job)
        .where(Job.tenant_id.is_(None), Job.scheduled_for.is_not(None))
        .order_by(Job.created_at.desc(), Job.id.desc())
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())


def _lease_until(lease_seconds: float) -> ColumnElement[Any]:
    return func.now() + literal(timedelta(seconds=lease_seconds))


async def fail_abandoned(session: AsyncSession, *, max_attempts: int) -> int:
    """Fail running jobs whose lease ran out after their last allowed attempt."""
    stmt = (
        update(Job)
        .where(
            Job.status == "running", Job.lease_expires_at < func.now(), Job.attempts >= max_attempts
        )
        .values(
            status="failed",
            finished_at=func.now(),
            lease_expires_at=None,
            errors=Job.errors.op("||")(
                func.jsonb_build_array(
                    f"abandoned: the worker stopped after {max_attempts} attempt(s)"
                )
            ),
        )
    )
    result = await session.execute(stmt)
    return int(result.rowcount)  # type: ignore[attr-defined]


async def claim_next(
    session: AsyncSession, *, worker_id: str, lease_seconds: float, max_attempts: int
) -> Job | None:
    """Take the oldest queued job (or one whose worker's lease expired), skipping locked rows."""
    candidate = (
        select(Job.id)
        .where(
            or_(
                Job.status == "queued",
                (Job.status == "running")
                & (Job.lease_expires_at < func.now())
                & (Job.attempts < max_attempts),
            )
        )
        .order_by(Job.created_at, Job.id)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    stmt = (
        update(Job)
        .where(Job.id == candidate)
        .values(
            status="running",
            attempts=Job.attempts + 1,
            worker_id=worker_id,
            started_at=func.now(),
            finished_at=None,
            lease_expires_at=_lease_until(lease_seconds),
        )
        .returning(Job)
        .execution_options(synchronize_session=False)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def renew_lease(
    session: AsyncSession, *, job_id: uuid.UUID, worker_id: str, lease_seconds: float
) -> bool:
    """Extend the lease of a job this worker still holds."""
    stmt = (
        update(Job)
        .where(Job.id == job_id, Job.worker_id == worker_id, Job.status == "running")
        .values(lease_expires_at=_lease_until(lease_seconds))
    )
    return bool((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def finish(
    session: AsyncSession,
    *,
    job_id: uuid.UUID,
    worker_id: str,
    status: str,
    result: dict[str, Any] | None,
    errors: list[str],
) -> bool:
    """Record the outcome of a job this worker still holds."""
    stmt = (
        update(Job)
        .where(Job.id == job_id, Job.worker_id == worker_id, Job.status == "running")
        .values(
            status=status,
            result=result,
            errors=errors,
            finished_at=func.now(),
            lease_expires_at=None,
        )
    )
    return bool((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def release(session: AsyncSession, *, job_id: uuid.UUID, worker_id: str) -> None:
    """Put a job back in the queue (the worker is shutting down)."""
    stmt = (
        update(Job)
        .where(Job.id == job_id, Job.worker_id == worker_id, Job.status == "running")
        .values(status="queued", worker_id=None, lease_expires_at=None, attempts=Job.attempts - 1)
    )
    await session.execute(stmt)


async def register_worker(
    session: AsyncSession, *, worker_id: str, hostname: str, pid: int
) -> None:
    """Record this worker process, alive now."""
    stmt = insert(Worker).values(id=worker_id, hostname=hostname, pid=pid)
    await session.execute(
        stmt.on_conflict_do_update(index_elements=[Worker.id], set_={"heartbeat_at": func.now()})
    )


async def heartbeat(session: AsyncSession, *, worker_id: str) -> None:
    """This worker is still alive."""
    await session.execute(
        update(Worker).where(Worker.id == worker_id).values(heartbeat_at=func.now())
    )


@dataclass(frozen=True)
class WorkerRow:
    """A registered worker and how long it has been silent."""

    id: str
    hostname: str
    pid: int
    silent_seconds: float


async def list_workers(session: AsyncSession) -> list[WorkerRow]:
    """Every registered worker."""
    rows = await session.execute(
        text(
            "SELECT id, hostname, pid, extract(epoch FROM now() - heartbeat_at) AS silent "
            "FROM workers ORDER BY id"
        )
    )
    return [WorkerRow(row.id, row.hostname, row.pid, float(row.silent)) for row in rows]


async def expire_leases_of(session: AsyncSession, *, worker_ids: list[str]) -> int:
    """End the leases of the running jobs of dead workers now, so the next claim takes them
    (or fails them after their last attempt); the dead workers' rows go."""
    if not worker_ids:
        return 0
    result = await session.execute(
        update(Job)
        .where(Job.status == "running", Job.worker_id.in_(worker_ids))
        .values(lease_expires_at=func.now() - literal(timedelta(seconds=1)))
    )
    await session.execute(delete(Worker).where(Worker.id.in_(worker_ids)))
    return int(result.rowcount)  # type: ignore[attr-defined]


async def unregister_worker(session: AsyncSession, *, worker_id: str) -> None:
    """This worker stops."""
    await session.execute(delete(Worker).where(Worker.id == worker_id))


async def add_progress(session: AsyncSession, *, job_id: uuid.UUID, counts: dict[str, int]) -> None:
    """Add `counts` to the job's progress, in the caller's transaction (the one that did the
    work, so the figures and the work commit or roll back together)."""
    await session.execute(
        text("""
        UPDATE jobs SET progress = progress || (
            SELECT COALESCE(jsonb_object_agg(
                       c.key, COALESCE((progress ->> c.key)::bigint, 0) + c.value::bigint),
                   '{}'::jsonb)
            FROM jsonb_each_text(CAST(:counts AS jsonb)) AS c)
        WHERE id = :job_id"""),
        {"job_id": job_id, "counts": json.dumps(counts)},
    )


async def progress_of(session: AsyncSession, *, job_id: uuid.UUID) -> dict[str, int]:
    """The job's committed counts across attempts."""
    value = (await session.execute(select(Job.progress).where(Job.id == job_id))).scalar()
    return {key: int(count) for key, count in (value or {}).items()}


async def replace_params(
    session: AsyncSession, *, job_id: uuid.UUID, params: dict[str, Any]
) -> None:
    """Overwrite a job's params (an erasure drops the values it was asked to erase)."""
    await session.execute(update(Job).where(Job.id == job_id).values(params=params))


async def delete_tenant_jobs(session: AsyncSession, *, tenant_id: str, keep: uuid.UUID) -> int:
    """Delete the tenant's jobs that are not running, except `keep`; how many."""
    stmt = delete(Job).where(Job.tenant_id == tenant_id, Job.id != keep, Job.status != "running")
    return int((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def open_job_exists(
    session: AsyncSession, *, tenant_id: str, kind: str, params: dict[str, Any]
) -> bool:
    """True when the tenant has a queued or running job of `kind` whose params contain
    `params`."""
    stmt = (
        select(func.count())
        .select_from(Job)
        .where(
            Job.tenant_id == tenant_id,
            Job.kind == kind,
            Job.status.in_(("queued", "running")),
            Job.params.contains(params),
        )
    )
    return bool((await session.execute(stmt)).scalar_one())
