"""Jobs: enqueue, read and list; the context background work runs with."""

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
)

from app.core.config import Settings
from app.core.errors import found
from app.core.scope import Scope, scoped_transaction
from app.embedding import Embedder
from app.models import Job
from app.repositories import jobs as job_rows
from app.repositories.jobs import JobFilters
from app.schemas.jobs import JobListQuery
from app.services import actors, butler_limits


@dataclass(frozen=True)
class JobContext:
    """What background work needs: its own sessions, the settings and the embedder."""

    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings
    embedder: Embedder
    worker_id: str = field(default_factory=lambda: f"worker-{uuid.uuid4().hex[:12]}")

    @asynccontextmanager
    async def transaction(self, scope: Scope) -> AsyncIterator[AsyncSession]:
        """A session of its own in one transaction in `scope` (one tenant's unit of work, or
        `SYSTEM` for cross-tenant work): committed on success, else rolled back."""
        async with scoped_transaction(self.sessionmaker, scope) as session:
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


async def enqueue(
    session: AsyncSession, *, tenant_id: str, kind: str, params: dict[str, Any]
) -> Job:
    """Queue a job of the tenant on behalf of the current actor's key; any worker will run it.
    A job works on every butler of the tenant: Forbidden for a key limited to butlers."""
    butler_limits.check_unlimited(f"a {kind} job")
    return await job_rows.enqueue(
        session, tenant_id=tenant_id, kind=kind, params=params, actor_key_id=actors.current().key_id
    )


async def get_job(session: AsyncSession, *, tenant_id: str, job_id: uuid.UUID) -> Job:
    """The tenant's job; NotFound otherwise."""
    job = await job_rows.get(session, tenant_id=tenant_id, job_id=job_id)
    return found(job, f"job {job_id} not found")


async def recent_scheduled(session: AsyncSession, *, limit: int) -> list[Job]:
    """The scheduler's newest jobs (decay, cleanup, consolidation for every tenant); read in
    a system transaction."""
    return await job_rows.recent_scheduled(session, limit=limit)


async def list_jobs(
    session: AsyncSession, *, tenant_id: str, query: JobListQuery
) -> tuple[list[Job], str | None]:
    """A page of the tenant's jobs, newest first."""
    return await job_rows.list_jobs(
        session,
        tenant_id=tenant_id,
        filters=JobFilters(kind=query.kind, status=query.status),
        limit=query.limit,
        cursor=query.cursor,
    )
