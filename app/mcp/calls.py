"""What every tool call shares: the caller, one transaction, request models, error mapping."""

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ValidationError
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.datastructures import State

from app.core.config import Settings
from app.core.errors import (
    ROW_POLICY_REFUSAL,
    STATEMENT_TIMEOUT,
    DomainError,
    is_row_policy_refusal,
    is_statement_timeout,
)
from app.core.scope import scoped_transaction
from app.deps import (
    ReplicaFailed,
    note_write,
    primary_only,
    read_transaction,
    request_scope,
    writer_key,
)
from app.embedding import Embedder
from app.responses.pages import page_out
from app.retrieval.searcher import Searcher
from app.retrieval.user_reranker import UserReranker
from app.services import actors

TENANT_SCOPE_KEY = "engram.tenant_id"
ACTOR_SCOPE_KEY = "engram.actor"

ModelT = TypeVar("ModelT", bound=BaseModel)
# What a tool returns: a response model serialised to JSON (UUID strings, ISO 8601 times).
JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Caller:
    """Who called a tool (the tenant of its API key) and the app's shared state."""

    tenant_id: str
    state: State
    actor: actors.Actor = actors.SYSTEM

    @property
    def settings(self) -> Settings:
        settings: Settings = self.state.settings
        return settings

    @property
    def embedder(self) -> Embedder:
        embedder: Embedder = self.state.embedder
        return embedder

    @property
    def searcher(self) -> Searcher:
        return Searcher(self.tenant_id, self.embedder, self.settings.retrieval)

    @property
    def reranker(self) -> UserReranker | None:
        reranker: UserReranker | None = getattr(self.state, "reranker", None)
        return reranker

    @property
    def sessionmaker(self) -> async_sessionmaker[AsyncSession]:
        maker: async_sessionmaker[AsyncSession] = self.state.sessionmaker
        return maker


def caller_of(ctx: Context) -> Caller:
    """The caller of this tool call, as the /mcp endpoint authenticated it."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    tenant_id = scope.get("state", {}).get(TENANT_SCOPE_KEY)
    if tenant_id is None:
        # Only reachable if the server were served without the authenticating endpoint.
        raise ToolError("the call is not authenticated")
    return Caller(
        tenant_id=tenant_id,
        state=scope["app"].state,
        actor=scope["state"].get(ACTOR_SCOPE_KEY, actors.SYSTEM),
    )


def build(model: type[ModelT], **arguments: Any) -> ModelT:
    """The REST request model built from tool arguments, so the same limits apply.

    Arguments left out (None) take the model's defaults. A bad one is a tool error naming it.
    """
    given = {name: value for name, value in arguments.items() if value is not None}
    try:
        return model.model_validate(given)
    except ValidationError as error:
        raise ToolError(describe_validation(error)) from None


def describe_validation(error: ValidationError) -> str:
    """'Invalid value for: a, b' and one line per problem, naming the argument."""
    problems = [
        (".".join(str(part) for part in err["loc"]) or "arguments", err["msg"])
        for err in error.errors()
    ]
    fields = ", ".join(sorted({field for field, _ in problems}))
    lines = "\n".join(f"- {field}: {message}" for field, message in problems)
    return f"Invalid value for: {fields}\n{lines}"


def describe_domain_error(error: DomainError) -> str:
    """The service's own message, with the argument it names."""
    prefix = f"{error.title} ({error.field}): " if error.field else f"{error.title}: "
    return prefix + error.detail


@asynccontextmanager
async def transaction(caller: Caller, *, read_only: bool = False) -> AsyncIterator[AsyncSession]:
    """One transaction for the call, committed before the result is returned; with
    `read_only`, on a read replica when one may serve the caller (app/reads.py).

    Domain errors become tool errors with their message; integrity and range errors of the
    database the same tool errors REST answers with 409 and 422.
    """
    scope = request_scope(caller.settings, caller.tenant_id, caller.actor)
    try:
        if read_only:
            async with read_transaction(
                caller.state, scope, writer_key(caller.tenant_id, caller.actor)
            ) as session:
                yield session
        else:
            async with scoped_transaction(caller.sessionmaker, scope) as session:
                yield session
    except DomainError as error:
        raise ToolError(describe_domain_error(error)) from None
    except IntegrityError:
        raise ToolError("Conflict: the change conflicts with stored data.") from None
    except DataError:
        raise ToolError("Invalid input: a value is out of range for storage.") from None
    except DBAPIError as error:
        if is_row_policy_refusal(error):
            raise ToolError(f"Forbidden: {ROW_POLICY_REFUSAL}") from None
        if is_statement_timeout(error):
            raise ToolError(f"Statement timeout: {STATEMENT_TIMEOUT}") from None
        raise


async def call(
    ctx: Context, work: Callable[[AsyncSession, Caller], Awaitable[BaseModel]]
) -> JsonObject:
    """Run `work` for the authenticated caller in one transaction; its response as JSON."""
    caller = caller_of(ctx)
    # Tool calls run in the MCP session's task, not the HTTP request's: set the actor here.
    with actors.acting_as(caller.actor):
        async with transaction(caller) as session:
            response = await work(session, caller)
        await note_write(caller.state, caller.tenant_id)
    return response.model_dump(mode="json")


async def page_call(
    ctx: Context,
    lister: Callable[..., Awaitable[tuple[Sequence[Any], str | None]]],
    item_out: Callable[[Any], BaseModel],
    *,
    read_only: bool = True,
    **arguments: Any,
) -> JsonObject:
    """One page of a listing, `lister(session, tenant_id=..., **arguments)`, each row mapped
    by `item_out`: as `read_call` when `read_only`, else as `call`."""

    async def work(session: AsyncSession, caller: Caller) -> BaseModel:
        return page_out(await lister(session, tenant_id=caller.tenant_id, **arguments), item_out)

    return await (read_call if read_only else call)(ctx, work)


async def read_call(
    ctx: Context, work: Callable[[AsyncSession, Caller], Awaitable[BaseModel]]
) -> JsonObject:
    """`call` for a tool that only reads: on a read replica when one may serve the caller,
    run again on the primary if the replica fails during the call."""
    caller = caller_of(ctx)
    with actors.acting_as(caller.actor):
        try:
            async with transaction(caller, read_only=True) as session:
                response = await work(session, caller)
        except ReplicaFailed:
            with primary_only():
                async with transaction(caller, read_only=True) as session:
                    response = await work(session, caller)
    return response.model_dump(mode="json")
