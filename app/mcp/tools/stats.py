"""The stats tool: counts of memories by lifecycle state, as GET /v1/stats gives them."""

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import OptionalScopeArg
from app.mcp.calls import Caller, JsonObject, read_call
from app.mcp.toolset import ToolSet
from app.schemas.stats import StatsOut
from app.services import stats

tools = ToolSet("admin")


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_stats(ctx: Context, scope: OptionalScopeArg = None) -> JsonObject:
    """Count memories by lifecycle state (episodes and consolidation backlog, facts by
    validity, rules by maturity). Use it to check the memory's health or before deciding
    to run consolidation or cleanup."""

    async def work(session: AsyncSession, caller: Caller) -> StatsOut:
        return await stats.memory_stats(
            session,
            tenant_id=caller.tenant_id,
            scope=scope,
            consolidation_configured=caller.settings.llm.base_url is not None,
        )

    return await read_call(ctx, work)
