"""Job tools: queue consolidation and episode cleanup, as POST /v1/jobs/* does."""

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.calls import Caller, JsonObject, build, call
from app.schemas.jobs import CleanupJobCreate, JobOut
from app.services import jobs
from app.services.responses import job_out

MaxEntriesArg = Annotated[int, Field(description="Episodes to keep at most; the oldest "
                                                 "consolidated ones are deleted first.")]


def register(server: MCPServer) -> None:
    """Add the job tools."""

    @server.tool()
    async def memory_run_consolidation(ctx: Context) -> JsonObject:
        """Queue consolidation: pending episodes are distilled into facts and rules by the
        configured LLM (a dry run that only counts without one). Use it after a session with
        many new episodes. Returns the queued job; a worker runs it shortly."""

        async def work(session: AsyncSession, caller: Caller) -> JobOut:
            job = await jobs.enqueue(session, tenant_id=caller.tenant_id, kind="consolidation",
                                     params={})
            return job_out(job)

        return await call(ctx, work)

    @server.tool()
    async def memory_run_episode_cleanup(ctx: Context,
                                         max_entries: MaxEntriesArg = 10_000) -> JsonObject:
        """Queue episode cleanup: expired consolidated or forgotten episodes are deleted, and
        expired unconsolidated ones once the server's unconsolidated_grace_days have passed;
        then, beyond max_entries, the oldest consolidated ones and after them the oldest
        expired ones. An episode that has not expired is never deleted for capacity. Returns
        the queued job; a worker runs it shortly."""
        params = build(CleanupJobCreate, max_entries=max_entries).model_dump()

        async def work(session: AsyncSession, caller: Caller) -> JobOut:
            job = await jobs.enqueue(session, tenant_id=caller.tenant_id, kind="cleanup",
                                     params=params)
            return job_out(job)

        return await call(ctx, work)
