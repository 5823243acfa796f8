"""Request dependencies: settings, the per-request transaction, the tenant, the embedder."""

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.datastructures import State

from app.core.config import Settings
from app.core.credentials import MISSING_KEY, UNKNOWN_KEY
from app.core.errors import Forbidden, Unauthorized
from app.core.scope import SYSTEM, Scope, scoped_transaction, set_local
from app.embedding import Embedder
from app.postgres.replicas import ReplicaSet
from app.reads import SAFE_METHODS, read_transaction, writer_key
from app.reads import ReplicaFailed as ReplicaFailed  # for mcp/calls, which imports deps
from app.reads import primary_only as primary_only
from app.repositories import references
from app.retrieval.searcher import Searcher
from app.retrieval.user_reranker import UserReranker
from app.services import actors
from app.services.api_keys import resolve_key
from app.services.export_snapshot import ExportSlots

logger = logging.getLogger(__name__)

bearer_scheme = HTTPBearer(auto_error=False, description="`Authorization: Bearer <API key>`")
api_key_scheme = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="The API key in an `X-API-Key` header."
)


# Dependencies are `async def` even when they do no I/O: FastAPI runs a plain `def`
# dependency on a worker thread, a hop per request for reading app.state.
async def get_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


async def get_tenant_id(
    request: Request,
    settings: SettingsDep,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
    header_key: Annotated[str | None, Security(api_key_scheme)],
) -> str:
    """The caller's tenant, taken from its API key and from nothing else.

    The key also becomes the request's actor, which every audit event it causes records.
    """
    caller = await caller_for_key(request.app.state, bearer.credentials if bearer else header_key)
    if not caller.can_write and not only_reads(request):
        raise Forbidden("this API key is read-only")
    actors.become(caller.actor)
    return caller.tenant_id


def route_name(request: Request) -> str | None:
    """The operation a request reached (its route's name)."""
    return getattr(request.scope.get("route"), "name", None)


# POST operations that only read (and count references, as every read does).
READING_POSTS = frozenset(
    {
        "search_memories",
        "recall_memories",
        "memory_context",
        "resolve_entity",
        "search_runs",
        "search_procedures",
        "search_arcs",
        "agent_context",
    }
)


def only_reads(request: Request) -> bool:
    """True for a request a read-only key may make: GET, HEAD, or a POST that only reads."""
    if request.method in ("GET", "HEAD"):
        return True
    return request.method == "POST" and route_name(request) in READING_POSTS


@dataclass(frozen=True)
class KeyCaller:
    """An authenticated caller: its tenant, the actor its events record, whether it may
    change data (a read-only key may not)."""

    tenant_id: str
    actor: actors.Actor
    can_write: bool = True


async def caller_for_key(state: State, secret: str | None) -> KeyCaller:
    """The tenant and actor of an API key, for REST and MCP alike; Unauthorized when there is
    none.

    With authentication disabled every caller is the default tenant, acting as "anonymous".
    Resolved outside any request transaction (see `resolve_key`), so a request takes a
    database connection only when it first runs SQL.
    """
    settings: Settings = state.settings
    if settings.auth_disabled:
        return KeyCaller(settings.default_tenant, actors.ANONYMOUS)
    if not secret:
        raise Unauthorized(MISSING_KEY)
    owner = await resolve_key(state.sessionmaker, state.tenant_cache, secret)
    if owner is None:
        raise Unauthorized(UNKNOWN_KEY)
    return KeyCaller(
        owner.tenant_id, actors.for_key(owner.key_id, owner.butlers), owner.access == "write"
    )


async def request_sessionmaker(request: Request) -> async_sessionmaker[AsyncSession]:
    """The app's sessionmaker, for a response that reads after the request's transaction."""
    maker: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
    return maker


TenantDep = Annotated[str, Depends(get_tenant_id)]


def request_scope(settings: Settings, tenant_id: str, actor: actors.Actor | None = None) -> Scope:
    """The caller's tenant, limited to the butlers of the caller's key (the current actor
    unless given); with `row_level_security` off, a system scope, so only the queries' own
    WHERE clauses keep tenants apart (for testing those clauses), still limited to the
    key's butlers. Its statements are cancelled past `db_statement_timeout_seconds`."""
    actor = actors.current() if actor is None else actor
    base = Scope(tenant_id=tenant_id) if settings.row_level_security else SYSTEM
    base = replace(base, statement_timeout_ms=round(settings.db_statement_timeout_seconds * 1000))
    if not actor.limited:
        return base
    return replace(base, butlers=actor.butlers, key_id=str(actor.key_id))


async def get_session(request: Request, tenant_id: TenantDep) -> AsyncIterator[AsyncSession]:
    """One transaction per request in the caller's tenant, committed before the response."""
    scope = request_scope(request.app.state.settings, tenant_id)
    async with scoped_transaction(request.app.state.sessionmaker, scope) as session:
        yield session
    if request.method not in SAFE_METHODS:
        await note_write(request.app.state, tenant_id)


async def note_write(state: State, tenant_id: str) -> None:
    """With read replicas: the caller's next reads must see what it just committed."""
    replicas: ReplicaSet = state.replicas
    await replicas.note_write(writer_key(tenant_id))


# scope="function": the commit happens before the response leaves, so a failed commit
# is reported to the caller instead of a success.
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]


async def get_read_session(request: Request, tenant_id: TenantDep) -> AsyncIterator[AsyncSession]:
    """One read-only transaction per request in the caller's tenant: on a read replica when
    one may serve the caller (app/reads.py), else on the primary."""
    scope = request_scope(request.app.state.settings, tenant_id)
    async with read_transaction(request.app.state, scope, writer_key(tenant_id)) as session:
        yield session


# For routes that never write, but for the references a read counts (app/services/references).
ReadSessionDep = Annotated[AsyncSession, Depends(get_read_session, scope="function")]

# PostgreSQL refuses any write in the transaction from its first statement on.
READ_ONLY = {"transaction_read_only": "on"}


async def get_query_session(request: Request, tenant_id: TenantDep) -> AsyncIterator[AsyncSession]:
    """A read-only transaction per request in the caller's tenant (on a read replica when one
    may serve the caller), ended after the answer is sent: it wrote nothing, so its end
    cannot change the answer, and the caller does not wait for it. An error before the
    answer reaches the caller as usual; a failure to end after it is logged."""
    scope = request_scope(request.app.state.settings, tenant_id)
    answered = False
    try:
        async with read_transaction(request.app.state, scope, writer_key(tenant_id)) as session:
            if not references.on_replica(session):  # a replica's transactions are read-only
                await set_local(session, READ_ONLY)
            yield session
            answered = True
    except Exception as error:
        if not answered:
            raise
        logger.warning(
            "a read-only transaction failed to end after its answer was sent: %s: %s",
            type(error).__name__,
            error,
        )


# For routes that only read (searches, and recall and context, whose references the process's
# queue writes): the caller gets the answer before the transaction ends.
QuerySessionDep = Annotated[AsyncSession, Depends(get_query_session, scope="request")]


async def request_embedder(request: Request) -> Embedder:
    """The shared embedder (the embedding model)."""
    embedder: Embedder = request.app.state.embedder
    return embedder


EmbedderDep = Annotated[Embedder, Depends(request_embedder)]


async def request_searcher(
    tenant_id: TenantDep, embedder: EmbedderDep, settings: SettingsDep
) -> Searcher:
    """Who searches and with what: the caller's tenant, the shared model, retrieval settings."""
    return Searcher(tenant_id, embedder, settings.retrieval)


SearcherDep = Annotated[Searcher, Depends(request_searcher)]


async def request_reranker(request: Request) -> UserReranker | None:
    """The reranker the operator configured; None when it is off."""
    reranker: UserReranker | None = getattr(request.app.state, "reranker", None)
    return reranker


RerankerDep = Annotated[UserReranker | None, Depends(request_reranker)]


async def request_export_slots(request: Request) -> ExportSlots:
    """The exports each tenant has under way in this process."""
    slots: ExportSlots = request.app.state.export_slots
    return slots


ExportSlotsDep = Annotated[ExportSlots, Depends(request_export_slots)]
SessionmakerDep = Annotated[async_sessionmaker[AsyncSession], Depends(request_sessionmaker)]
