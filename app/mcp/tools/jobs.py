"""Job tools: queue consolidation and episode cleanup, as POST /v1/jobs/* does, and read
jobs back, as GET /v1/jobs does."""

import uuid
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.calls import Caller, JsonObject, build, call, page_call
from app.mcp.toolset import ToolSet
from app.responses.jobs import job_out
from app.schemas.jobs import CleanupJobCreate, JobKind, JobListQuery, JobOut, JobStatus
from app.services import jobs

MaxEntriesArg = Annotated[
    int,
    Field(description="Episodes to keep at most; the oldest consolidated ones are deleted first."),
]
JobIdArg = Annotated[
    uuid.UUID, Field(description="The job's id (a UUID), as the tool that queued it returned.")
]


tools = ToolSet("admin")


@tools.add()
async def memory_run_consolidation(ctx: Context) -> JsonObject:
    """Queue consolidation: the configured LLM distils pending episodes into facts and rules
    (without one, a dry run that counts). Returns the queued job."""

    async def work(session: AsyncSession, caller: Caller) -> JobOut:
        job = await jobs.enqueue(
            session, tenant_id=caller.tenant_id, kind="consolidation", params={}
        )
        return job_out(job)

    return await call(ctx, work)


@tools.add()
async def memory_run_episode_cleanup(
    ctx: Context, max_entries: MaxEntriesArg = 10_000
) -> JsonObject:
    """Queue episode cleanup: expired episodes that were consolidated or forgotten are deleted,
    then the oldest beyond max_entries. Returns the queued job."""
    params = build(CleanupJobCreate, max_entries=max_entries).model_dump()

    async def work(session: AsyncSession, caller: Caller) -> JobOut:
        job = await jobs.enqueue(session, tenant_id=caller.tenant_id, kind="cleanup", params=params)
        return job_out(job)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def job_get(job_id: JobIdArg, ctx: Context) -> JsonObject:
    """Read one job (status, timings, result figures, errors), e.g. to follow a job another tool
    queued until it has succeeded or failed."""

    async def work(session: AsyncSession, caller: Caller) -> JobOut:
        return job_out(await jobs.get_job(session, tenant_id=caller.tenant_id, job_id=job_id))

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def job_list(
    ctx: Context,
    kind: JobKind | None = None,
    status: JobStatus | None = None,
    limit: int = 20,
    cursor: str | None = None,
) -> JsonObject:
    """List the tenant's jobs, newest first (consolidation, decay, cleanup, erasure, ...),
    optionally of one kind or status; limit 1-200 a page, next_cursor gives the next."""
    query = build(JobListQuery, kind=kind, status=status, limit=limit, cursor=cursor)
    return await page_call(ctx, jobs.list_jobs, job_out, query=query, read_only=False)
