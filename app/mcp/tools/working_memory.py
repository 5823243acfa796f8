"""Working memory tools: one short-lived record per (agent, session) and its scratchpad, as
/v1/working-memory offers them; `if_match` takes the record's etag as the If-Match header does."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.constants import MAX_SESSION_ID_CHARS
from app.core.errors import DomainError
from app.mcp.calls import Caller, JsonObject, build, call
from app.mcp.toolset import ToolSet
from app.responses.working_memory import scratchpad_entry_out, working_memory_out
from app.schemas.common import ResponseModel
from app.schemas.working_memory import (
    ScratchpadEntry,
    ScratchpadWrite,
    WorkingMemoryOut,
    WorkingMemoryWrite,
)
from app.services import working_memory
from app.services.working_memory import Key

AgentIdArg = Annotated[
    str, Field(min_length=1, max_length=200, description="The agent whose working memory it is.")
]
SessionIdArg = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SESSION_ID_CHARS,
        description="The session: any string up to 200 characters (a UUID, a thread id).",
    ),
]
ScratchpadKeyArg = Annotated[
    str, Field(min_length=1, max_length=200, description="A scratchpad key.")
]
IfMatchArg = Annotated[
    str | None,
    Field(
        max_length=2000,
        description="Write only if the record's etag is still this one (from "
        "the last read or write), or '*' for any existing record; "
        "a precondition error otherwise.",
    ),
]
DocumentArg = Annotated[dict[str, Any] | None, Field(description="A JSON object.")]


class WorkingMemoryCleared(ResponseModel):
    """The working memory that was deleted."""

    agent_id: str
    session_id: str
    deleted: bool = True


tools = ToolSet("working_memory")


# The service names the HTTP request's parts; a tool's error names its arguments.
ARGUMENT_OF = {"If-Match": "if_match", "If-None-Match": "create_only"}


def _key(caller: Caller, agent_id: str, session_id: str) -> Key:
    return Key(tenant_id=caller.tenant_id, agent_id=agent_id, session_id=session_id)


@contextmanager
def _arguments_named(document: str = "body", *, whole: bool = False) -> Iterator[None]:
    """Errors of the service name the tool's arguments: `document` (with the path inside
    it, unless `whole`) where the service names the body."""
    try:
        yield
    except DomainError as error:
        field = error.field or ""
        if field == "body" or field.startswith("body."):
            error.field = document if whole else document + field.removeprefix("body")
        else:
            error.field = ARGUMENT_OF.get(field, error.field)
        raise


@tools.add()
async def working_memory_get(
    agent_id: AgentIdArg, session_id: SessionIdArg, ctx: Context
) -> JsonObject:
    """Read the session's working memory and its etag, e.g. at the start of each step of a task
    to pick up where the session left off."""

    async def work(session: AsyncSession, caller: Caller) -> WorkingMemoryOut:
        return working_memory_out(
            await working_memory.get(session, key=_key(caller, agent_id, session_id))
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(idempotent_hint=True))
async def working_memory_set(
    agent_id: AgentIdArg,
    session_id: SessionIdArg,
    ctx: Context,
    active_context: DocumentArg = None,
    scratchpad: DocumentArg = None,
    retrieved_memory_ids: list[str] | None = None,
    decisions: list[Any] | None = None,
    ttl_seconds: int | None = None,
    if_match: IfMatchArg = None,
    create_only: bool = False,
) -> JsonObject:
    """Create the session's working memory or replace all of it (fields left out become empty).
    To change a few keys, use working_memory_patch or scratchpad_set."""
    data = build(
        WorkingMemoryWrite,
        active_context=active_context,
        scratchpad=scratchpad,
        retrieved_memory_ids=retrieved_memory_ids,
        decisions=decisions,
        ttl_seconds=ttl_seconds,
    )

    async def work(session: AsyncSession, caller: Caller) -> WorkingMemoryOut:
        with _arguments_named():
            return working_memory_out(
                await working_memory.replace(
                    session,
                    key=_key(caller, agent_id, session_id),
                    data=data,
                    if_match=if_match,
                    if_none_match="*" if create_only else None,
                    default_ttl_hours=caller.settings.working_memory.ttl_hours,
                )
            )

    return await call(ctx, work)


@tools.add()
async def working_memory_patch(
    agent_id: AgentIdArg,
    session_id: SessionIdArg,
    patch: dict[str, Any],
    ctx: Context,
    if_match: IfMatchArg = None,
) -> JsonObject:
    """Change part of a session's working memory with a JSON Merge Patch (RFC 7396): objects
    merge key by key, null removes a key, arrays are replaced whole."""

    async def work(session: AsyncSession, caller: Caller) -> WorkingMemoryOut:
        with _arguments_named("patch"):
            return working_memory_out(
                await working_memory.merge_patch(
                    session,
                    key=_key(caller, agent_id, session_id),
                    patch=patch,
                    if_match=if_match,
                    default_ttl_hours=caller.settings.working_memory.ttl_hours,
                )
            )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(destructive_hint=True))
async def working_memory_clear(
    agent_id: AgentIdArg, session_id: SessionIdArg, ctx: Context, if_match: IfMatchArg = None
) -> JsonObject:
    """Delete the session's working memory now, when the task is over (it would otherwise
    expire on its own). Long-term memories stored meanwhile are not touched."""

    async def work(session: AsyncSession, caller: Caller) -> WorkingMemoryCleared:
        with _arguments_named():
            await working_memory.delete(
                session, key=_key(caller, agent_id, session_id), if_match=if_match
            )
        return WorkingMemoryCleared(agent_id=agent_id, session_id=session_id)

    return await call(ctx, work)


@tools.add()
async def scratchpad_get(
    agent_id: AgentIdArg, session_id: SessionIdArg, key: ScratchpadKeyArg, ctx: Context
) -> JsonObject:
    """Read the value under one key of the session's working-memory scratchpad; a missing
    key is a not-found error."""

    async def work(session: AsyncSession, caller: Caller) -> ScratchpadEntry:
        _, value = await working_memory.get_scratchpad_value(
            session, key=_key(caller, agent_id, session_id), name=key
        )
        return scratchpad_entry_out(key, value)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(idempotent_hint=True))
async def scratchpad_set(
    agent_id: AgentIdArg,
    session_id: SessionIdArg,
    key: ScratchpadKeyArg,
    value: Any,
    ctx: Context,
    if_match: IfMatchArg = None,
) -> JsonObject:
    """Store any JSON value under one scratchpad key of an existing working memory (create
    it first with working_memory_set), leaving the other keys alone. Returns the record."""
    # null is a value to store here, not an argument left out.
    data = ScratchpadWrite(value=None) if value is None else build(ScratchpadWrite, value=value)

    async def work(session: AsyncSession, caller: Caller) -> WorkingMemoryOut:
        with _arguments_named("value", whole=True):
            return working_memory_out(
                await working_memory.put_scratchpad_value(
                    session,
                    key=_key(caller, agent_id, session_id),
                    name=key,
                    data=data,
                    if_match=if_match,
                )
            )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(destructive_hint=True))
async def scratchpad_delete(
    agent_id: AgentIdArg,
    session_id: SessionIdArg,
    key: ScratchpadKeyArg,
    ctx: Context,
    if_match: IfMatchArg = None,
) -> JsonObject:
    """Remove one scratchpad key of the session's working memory (a missing key is a
    not-found error). Returns the record."""

    async def work(session: AsyncSession, caller: Caller) -> WorkingMemoryOut:
        with _arguments_named():
            return working_memory_out(
                await working_memory.delete_scratchpad_value(
                    session, key=_key(caller, agent_id, session_id), name=key, if_match=if_match
                )
            )

    return await call(ctx, work)
