"""Tools that act on one memory of any type (episode, fact or rule) by its id: get, confirm,
forget and delete for good."""

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import MemoryIdArg, MemoryTypeArg
from app.mcp.calls import Caller, JsonObject, call, read_call
from app.mcp.groups import CORE
from app.mcp.toolset import ToolSet
from app.responses.data_rights import deleted_out
from app.responses.memories import memory_out
from app.schemas.data_rights import DeletedOut
from app.schemas.episodes import EpisodeOut
from app.schemas.facts import FactOut
from app.schemas.rules import RuleOut
from app.services import deletion, memories

MemoryOut = EpisodeOut | FactOut | RuleOut


tools = ToolSet(CORE)


@tools.add()
async def memory_get(
    memory_type: MemoryTypeArg, memory_id: MemoryIdArg, ctx: Context
) -> JsonObject:
    """Read one episode, fact or rule by type and id (ids come from search, recall or store
    results)."""
    return await _on_memory(ctx, memory_type, memory_id, memories.get_memory, read_only=True)


@tools.add()
async def memory_confirm(
    memory_type: MemoryTypeArg, memory_id: MemoryIdArg, ctx: Context
) -> JsonObject:
    """Confirm that a fact or rule still holds (the user or the world corroborated it),
    restarting its confidence decay."""
    return await _on_memory(ctx, memory_type, memory_id, memories.confirm)


@tools.add(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
async def memory_forget(
    memory_type: MemoryTypeArg, memory_id: MemoryIdArg, ctx: Context
) -> JsonObject:
    """Forget a memory that is wrong or that the user asks you to forget; it leaves search and
    recall. To correct a fact, store the new one instead."""
    return await _on_memory(ctx, memory_type, memory_id, memories.forget)


@tools.add(
    annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False), group="memories"
)
async def memory_delete(
    memory_type: MemoryTypeArg, memory_id: MemoryIdArg, ctx: Context
) -> JsonObject:
    """Delete a memory for good when the user wants it gone (a fact with its whole history); for
    a memory that is merely wrong, use memory_forget."""
    model = memories.model_for(memory_type)

    async def work(session: AsyncSession, caller: Caller) -> DeletedOut:
        if memory_type == "episode":
            counts = await deletion.delete_episode(
                session,
                tenant_id=caller.tenant_id,
                episode_id=memory_id,
                embedder=caller.embedder,
                keyword_context=caller.settings.keyword_context,
            )
        else:
            counts = await deletion.delete_memory(
                session, model, tenant_id=caller.tenant_id, memory_id=memory_id
            )
        return deleted_out(memory_type, memory_id, counts)

    return await call(ctx, work)


async def _on_memory(
    ctx: Context,
    memory_type: str,
    memory_id: uuid.UUID,
    action: Callable[..., Awaitable[Any]],
    *,
    read_only: bool = False,
) -> JsonObject:
    """Run a service action on one memory by type and id; the memory as it is after. An
    action that only reads may run on a read replica."""
    model = memories.model_for(memory_type)

    async def work(session: AsyncSession, caller: Caller) -> MemoryOut:
        row = await action(session, model, tenant_id=caller.tenant_id, memory_id=memory_id)
        return memory_out(row)

    return await (read_call if read_only else call)(ctx, work)
