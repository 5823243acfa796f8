"""Episode tools: record observations one at a time or as a batch, and list episodes."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import InvalidInput
from app.mcp.args import (
    ButlerArg,
    ContentArg,
    CursorArg,
    FilterArg,
    ImportanceArg,
    PageLimitArg,
    filter_of,
)
from app.mcp.calls import Caller, JsonObject, build, call, page_call
from app.mcp.groups import CORE
from app.mcp.toolset import ToolSet
from app.responses.episodes import episode_out
from app.schemas.common import ConsolidationStatus, Name, SessionIdIn
from app.schemas.episodes import (
    EpisodeBatchCreate,
    EpisodeBatchOut,
    EpisodeCreate,
    EpisodeListQuery,
    EpisodeOut,
)
from app.services import episodes

tools = ToolSet("memories")


@tools.add(group=CORE)
async def memory_store_episode(
    content: ContentArg,
    butler: ButlerArg,
    ctx: Context,
    session_id: str | None = None,
    importance: ImportanceArg = 5.0,
) -> JsonObject:
    """Record an observation from the conversation: what the user said or did, an outcome.
    Episodes expire after a few days unless consolidation distils them into facts and rules."""
    item = build(
        EpisodeCreate, content=content, butler=butler, session_id=session_id, importance=importance
    )

    async def work(session: AsyncSession, caller: Caller) -> EpisodeOut:
        [row] = await episodes.create_episodes(
            session,
            tenant_id=caller.tenant_id,
            embedder=caller.embedder,
            items=[item],
            ttl_days=caller.settings.episode_ttl_days,
            keyword_context=caller.settings.keyword_context,
            mentions=caller.settings.auto_links.mentions,
            session_gap_minutes=caller.settings.episode_session_gap_minutes,
        )
        return episode_out(row)

    return await call(ctx, work)


@tools.add()
async def memory_store_episodes(
    items: Annotated[
        list[dict[str, Any]],
        Field(
            min_length=1,
            description="The episodes, each {content, butler, session_id?, "
            "importance?, occurred_at?}, in the order they happened.",
        ),
    ],
    ctx: Context,
) -> JsonObject:
    """Record many observations at once, all or none, e.g. the turns of a conversation in order;
    up to the server's max_batch_size."""
    request = build(EpisodeBatchCreate, items=items)

    async def work(session: AsyncSession, caller: Caller) -> EpisodeBatchOut:
        if len(request.items) > caller.settings.max_batch_size:
            raise InvalidInput(
                f"a batch holds at most {caller.settings.max_batch_size} episodes", field="items"
            )
        rows = await episodes.create_episodes(
            session,
            tenant_id=caller.tenant_id,
            embedder=caller.embedder,
            items=request.items,
            ttl_days=caller.settings.episode_ttl_days,
            keyword_context=caller.settings.keyword_context,
            session_gap_minutes=caller.settings.episode_session_gap_minutes,
        )
        return EpisodeBatchOut(items=[episode_out(row) for row in rows])

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_list_episodes(
    ctx: Context,
    butler: Name | None = None,
    session_id: SessionIdIn | None = None,
    consolidation_status: ConsolidationStatus | None = None,
    include_expired: bool = False,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: FilterArg = None,
) -> JsonObject:
    """List episodes newest first, e.g. every turn of one session_id or of one butler, or those
    pending consolidation. To find episodes by meaning, use memory_search."""
    query = build(
        EpisodeListQuery,
        butler=butler,
        session_id=session_id,
        consolidation_status=consolidation_status,
        include_expired=include_expired,
        limit=limit,
        cursor=cursor,
    )
    return await page_call(
        ctx, episodes.list_episodes, episode_out, query=query, memory_filter=filter_of(filter)
    )
