"""Which tenant a transaction works for, told to PostgreSQL when it begins (see app/core/rls.py),
with any other settings local to the transaction asked for before then (`set_local`)."""

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import TextClause, event, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, SessionTransaction

from app.core.rls import BUTLERS_SETTING, JOB_SETTING, KEY_SETTING, SYSTEM_SETTING, TENANT_SETTING

SCOPE_KEY = "engram_scope"
_PENDING_KEY = "engram_pending_settings"
_BEGUN_KEY = "engram_begun"
# Set while `begin_with` begins a transaction: the settings ride on its own statement.
_CARRIED_KEY = "engram_carried_settings"
# The settings the transaction has sent, and what it read that holds to its end.
_APPLIED_KEY = "engram_applied_settings"
_MEMO_KEY = "engram_transaction_memo"
_NOW = "now"
# Set on a connection whose settings must be `SET LOCAL` statements (a Citus coordinator:
# only they reach the workers); `set_config` rides on the transaction's first statement else.
SET_LOCAL_KEY = "engram_set_local"
# Set on a coordinator connection that reports (or refuses) statements running on more than
# one shard; a transaction across tenants turns that off for itself.
MULTI_SHARD_KEY = "engram_multi_shard_checked"
MULTI_SHARD_SETTING = "citus.multi_task_query_log_level"
QUOTE = "'"


@dataclass(frozen=True)
class Scope:
    """One tenant's work (optionally reporting to one job), or deliberate cross-tenant work."""

    tenant_id: str | None = None
    system: bool = False
    job_id: str | None = None
    # A key limited to butlers (app/core/rls.py): only their rows, and the key's own events.
    butlers: tuple[str, ...] = ()
    key_id: str | None = None
    # PostgreSQL cancels a statement of the transaction that runs longer (0: no limit).
    statement_timeout_ms: int = 0


SYSTEM = Scope(system=True)


def scope_session(session: AsyncSession, scope: Scope) -> AsyncSession:
    """Make every transaction of `session` run in `scope` (set before its first statement)."""
    session.info[SCOPE_KEY] = scope
    return session


async def set_local(session: AsyncSession, settings: Mapping[str, str]) -> None:
    """Set PostgreSQL `settings` for the rest of the session's transaction: in the statement
    that begins it if it has not begun on the server yet (no round trip of its own); nothing
    is sent for those the transaction already has."""
    if session.info.get(_BEGUN_KEY):
        applied: dict[str, str] = session.info.setdefault(_APPLIED_KEY, {})
        changed = {key: value for key, value in settings.items() if applied.get(key) != value}
        if changed:
            connection = await session.connection()
            if connection.info.get(SET_LOCAL_KEY):
                for statement in set_local_statements(changed):
                    await connection.exec_driver_sql(statement)
            else:
                await session.execute(_set_config_statement(len(changed)), _parameters(changed))
            applied |= changed
    else:
        session.info[_PENDING_KEY] = {**session.info.get(_PENDING_KEY, {}), **settings}


def transaction_memo(session: AsyncSession) -> dict[str, Any]:
    """A place for what the session's transaction read that holds until it ends (a lock's
    worth): emptied when the transaction ends."""
    memo: dict[str, Any] = session.info.setdefault(_MEMO_KEY, {})
    return memo


async def transaction_now(session: AsyncSession) -> datetime:
    """`now()` of the session's transaction (when it began), read once for its length: bound
    as a value where a distributed statement refuses `now()` (with a column, in CASE, in an
    upsert's update)."""
    memo = transaction_memo(session)
    if _NOW not in memo:
        memo[_NOW] = (await session.execute(text("SELECT now()"))).scalar_one()
    now: datetime = memo[_NOW]
    return now


async def lengthen_statement_timeout(session: AsyncSession, factor: int) -> None:
    """Let the rest of the transaction's statements run `factor` times the scope's statement
    timeout (no change where the scope has none)."""
    scope: Scope | None = session.info.get(SCOPE_KEY)
    if scope is not None and scope.statement_timeout_ms > 0:
        await set_local(session, {"statement_timeout": str(scope.statement_timeout_ms * factor)})


async def begin_with(session: AsyncSession, columns: str) -> Any:
    """The row of `SELECT <columns>` (a select list and its FROM), sent as the statement that
    begins the transaction with its settings when it has not begun on the server yet (no
    round trip of its own), else on its own."""
    if session.info.get(_BEGUN_KEY):
        return (await session.execute(text(f"SELECT {columns}"))).one()
    session.info[_CARRIED_KEY] = {}
    try:
        await session.connection()  # begins the transaction: _apply_scope leaves the settings
        settings = session.info.pop(_CARRIED_KEY)
    finally:
        session.info.pop(_CARRIED_KEY, None)
    calls = [f"set_config(:key{i}, :value{i}, true)" for i in range(len(settings))]
    row = (
        await session.execute(text(f"SELECT {', '.join([*calls, columns])}"), _parameters(settings))
    ).one()
    return row[len(calls) :]


@cache
def _set_config_statement(count: int) -> TextClause:
    return text(
        "SELECT " + ", ".join(f"set_config(:key{i}, :value{i}, true)" for i in range(count))
    )


def set_local_statements(settings: Mapping[str, str]) -> list[str]:
    """One `SET LOCAL` statement per setting, its value quoted as a literal."""
    return [
        f"SET LOCAL \"{key}\" = '{value.replace(QUOTE, QUOTE * 2)}'"
        for key, value in settings.items()
    ]


def _parameters(settings: Mapping[str, str]) -> dict[str, str]:
    parameters: dict[str, str] = {}
    for index, (key, value) in enumerate(settings.items()):
        parameters |= {f"key{index}": key, f"value{index}": value}
    return parameters


@event.listens_for(Session, "after_begin")
def _apply_scope(session: Session, transaction: Any, connection: Any) -> None:
    session.info[_BEGUN_KEY] = True
    scope: Scope | None = session.info.get(SCOPE_KEY)
    settings = (
        {}
        if scope is None
        else {
            TENANT_SETTING: scope.tenant_id or "",
            SYSTEM_SETTING: "on" if scope.system else "off",
            JOB_SETTING: scope.job_id or "",
            BUTLERS_SETTING: ",".join(scope.butlers),
            KEY_SETTING: scope.key_id or "",
        }
    )
    if scope is not None and scope.statement_timeout_ms > 0:
        settings["statement_timeout"] = str(scope.statement_timeout_ms)
    settings |= session.info.pop(_PENDING_KEY, {})
    session.info[_APPLIED_KEY] = dict(settings)
    if connection.info.get(MULTI_SHARD_KEY) and scope is not None and scope.system:
        settings[MULTI_SHARD_SETTING] = "off"
    if connection.info.get(SET_LOCAL_KEY):
        for statement in set_local_statements(settings):
            connection.exec_driver_sql(statement)
        if _CARRIED_KEY in session.info:
            session.info[_CARRIED_KEY] = {}
    elif _CARRIED_KEY in session.info:
        session.info[_CARRIED_KEY] = settings
    elif settings:
        connection.execute(_set_config_statement(len(settings)), _parameters(settings))


@event.listens_for(Session, "after_transaction_end")
def _forget_transaction(session: Session, transaction: SessionTransaction) -> None:
    # A savepoint rolled back takes its settings and locks with it: forget what it may have.
    ended = (_BEGUN_KEY, _PENDING_KEY) if transaction.parent is None else ()
    for key in (*ended, _APPLIED_KEY, _MEMO_KEY):
        session.info.pop(key, None)


@asynccontextmanager
async def scoped_transaction(
    sessionmaker: async_sessionmaker[AsyncSession], scope: Scope
) -> AsyncIterator[AsyncSession]:
    """A session of its own in one transaction in `scope`: committed on success."""
    async with sessionmaker() as session, session.begin():
        yield scope_session(session, scope)


async def end_transaction(session: AsyncSession) -> None:
    """Commit the session's transaction now, giving its connection back to the pool, for a
    request that has read all it needs and then waits on something else (a reranker). Inside
    `scoped_transaction` a later statement fails instead of beginning a second transaction."""
    await session.commit()


@asynccontextmanager
async def side_session(session: AsyncSession) -> AsyncIterator[AsyncSession]:
    """A session of its own in `session`'s scope: a read made before the model runs gives its
    connection back at once instead of holding the request's transaction open."""
    async with AsyncSession(session.bind, info={SCOPE_KEY: session.info.get(SCOPE_KEY)}) as side:
        yield side
