"""Jobs: enqueue, read and list; the context background work runs with."""

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
)

from app.config import Settings
from app.embedding import Embedder
from app.errors import NotFound
from app.models import Job
from app.repositories import jobs as job_rows
from app.schemas.jobs import JobOut


@dataclass(frozen=True)
class JobContext:
    """What background work needs: its own sessions, the settings and the embedder."""

    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings
    embedder: Embedder
    worker_id: str = field(default_factory=lambda: f"worker-{uuid.uuid4().hex[:12]}")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session of its own in one transaction: committed on success, else rolled back."""
        async with self.sessionmaker() as session, session.begin():
            yield session

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        """A connection of its own, kept checked out for the whole block."""
        db_engine: AsyncEngine = self.sessionmaker.kw["bind"]
        async with db_engine.connect() as conn:
            yield conn


@dataclass
class JobOutcome:
    """What a job handler returns: result figures, errors met, and whether the job failed."""

    result: dict[str, Any]
    errors: list[str] = field(default_factory=list)
    failed: bool = False


async def enqueue(session: AsyncSession, *, tenant_id: str, kind: str,
                  params: dict[str, Any]) -> Job:
    """Queue a job of the tenant; any worker will run it."""
    return await job_rows.enqueue(session, tenant_id=tenant_id, kind=kind, params=params)


async def get_job(session: AsyncSession, *, tenant_id: str, job_id: uuid.UUID) -> Job:
    """The tenant's job; NotFound otherwise."""
    job = await job_rows.get(session, tenant_id=tenant_id, job_id=job_id)
    if job is None:
        raise NotFound(f"job {job_id} not found")
    return job


def job_filters(*, kind: str | None, status: str | None) -> list[ColumnElement[bool]]:
    """WHERE clauses of the job listing."""
    filters: list[ColumnElement[bool]] = []
    if kind is not None:
        filters.append(Job.kind == kind)
    if status is not None:
        filters.append(Job.status == status)
    return filters


def job_out(job: Job) -> JobOut:
    """A job as the API shows it."""
    duration = None
    if job.started_at is not None and job.finished_at is not None:
        duration = max(0.0, (job.finished_at - job.started_at).total_seconds())
    return JobOut(
        id=job.id, kind=job.kind, status=job.status, params=job.params,
        result=job.result, errors=list(job.errors), attempts=job.attempts,
        created_at=job.created_at, scheduled_for=job.scheduled_for, started_at=job.started_at,
        finished_at=job.finished_at, duration_seconds=duration,
    )
