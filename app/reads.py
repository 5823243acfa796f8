"""Where a read-only transaction runs: a read replica when one may serve it, else the primary.
Either way, the references it counts (recall, context) are handed to the process's queue once
it has ended, which writes them (`services/references.py`).

A replica serves a read when its last check found it up and, if the caller (an API key)
wrote within `read_your_writes_seconds`, it has replayed the primary's WAL position taken
after that write. The transaction begins on the replica before the read runs (the scope's
`set_config` is its first statement), so a dead replica is found before any work: it is
marked down and the read goes to the primary. A replica that fails later, during the read or
its commit, raises `ReplicaFailed`; `ReplicaRetryMiddleware` (REST) and `mcp/calls.read_call`
(MCP) then run the request again on the primary alone.
"""

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import State
from starlette.types import Message, Receive, Send
from starlette.types import Scope as AsgiScope

from app.core.asgi import HttpMiddleware
from app.core.errors import is_connection_failure
from app.core.scope import Scope, scope_session, scoped_transaction
from app.postgres.replicas import PRIMARY, READS, REPLICA_SKIPPED, Replica, ReplicaSet
from app.repositories import references
from app.services import actors

logger = logging.getLogger(__name__)

# True while a request runs again after its replica failed: it reads from the primary.
_PRIMARY_ONLY: ContextVar[bool] = ContextVar("engram_primary_only", default=False)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class ReplicaFailed(Exception):
    """A read failed on a replica; running it again on the primary is safe."""


def writer_key(tenant_id: str, actor: actors.Actor | None = None) -> str:
    """Whose writes a read must see: the tenant and API key (actor) of the caller."""
    actor = actor or actors.current()
    return f"{tenant_id}\x00{actor.name}"


@contextlib.contextmanager
def primary_only() -> Any:
    """Inside the block, every read transaction runs on the primary."""
    token = _PRIMARY_ONLY.set(True)
    try:
        yield
    finally:
        _PRIMARY_ONLY.reset(token)


async def _begin_on_replica(
    replicas: ReplicaSet, replica: Replica, scope: Scope, key: str
) -> AsyncSession | None:
    """A session in a transaction begun on `replica`, or None when it cannot serve `key`."""
    session = scope_session(replica.sessionmaker(), scope)
    session.info[references.REPLICA_KEY] = replica.name
    try:
        await session.connection()
        needed = replicas.writes.needed(key)
        if needed is None or await replicas.has_replayed(replica, session, needed):
            return session
        REPLICA_SKIPPED.labels(replica.name, "behind_own_write").inc()
    except Exception as error:  # noqa: BLE001 - any failure to begin: use the primary
        replicas.mark_down(replica, error)
    with contextlib.suppress(Exception):
        await session.close()
    return None


@asynccontextmanager
async def read_transaction(state: State, scope: Scope, key: str) -> AsyncIterator[AsyncSession]:
    """One read-only transaction in `scope` for the caller `key`: on a replica when one may
    serve it, else on the primary; committed on success."""
    replicas: ReplicaSet = state.replicas
    replica = None if _PRIMARY_ONLY.get() or not replicas.configured else replicas.pick()
    session = None if replica is None else await _begin_on_replica(replicas, replica, scope, key)
    if replica is None or session is None:
        READS.labels(PRIMARY).inc()
        async with scoped_transaction(state.sessionmaker, scope) as primary:
            primary.info[references.QUEUED_KEY] = state.references.queued
            yield primary
        state.references.add(references.take_pending(primary))
        return
    session.info[references.QUEUED_KEY] = state.references.queued
    READS.labels(replica.name).inc()
    try:
        try:
            yield session
            await session.commit()
        finally:
            with contextlib.suppress(Exception):
                await session.close()
    except (SQLAlchemyError, OSError, TimeoutError) as error:
        if is_connection_failure(error):
            replicas.mark_down(replica, error)
        else:
            REPLICA_SKIPPED.labels(replica.name, "failed").inc()
        logger.warning(
            "read on replica %s failed, running it on the primary: %s: %s",
            replica.name,
            type(error).__name__,
            error,
        )
        raise ReplicaFailed(str(error)) from error
    state.references.add(references.take_pending(session))


class ReplicaRetryMiddleware(HttpMiddleware):
    """Run a request again, on the primary alone, when its read failed on a replica before
    any of its answer was sent (the request body is replayed)."""

    async def handle(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        received: list[Message] = []

        async def recording() -> Message:
            message = await receive()
            received.append(message)
            return message

        if await self.answered(scope, recording, send, ReplicaFailed):
            return
        replay = iter(received)

        async def replaying() -> Message:
            return next(replay, None) or await receive()

        with primary_only():
            await self.app(scope, replaying, send)
