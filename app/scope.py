"""Which tenant a transaction works for, told to PostgreSQL when it begins (see app/rls.py)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from app.rls import JOB_SETTING, SYSTEM_SETTING, TENANT_SETTING

SCOPE_KEY = "engram_scope"
_APPLY = text("SELECT set_config(:tenant_key, :tenant, true), "
              "set_config(:system_key, :system, true), set_config(:job_key, :job, true)")


@dataclass(frozen=True)
class Scope:
    """One tenant's work (optionally reporting to one job), or deliberate cross-tenant work."""

    tenant_id: str | None = None
    system: bool = False
    job_id: str | None = None


SYSTEM = Scope(system=True)


def scope_session(session: AsyncSession, scope: Scope) -> AsyncSession:
    """Make every transaction of `session` run in `scope` (set before its first statement)."""
    session.info[SCOPE_KEY] = scope
    return session


@event.listens_for(Session, "after_begin")
def _apply_scope(session: Session, transaction: Any, connection: Any) -> None:
    scope: Scope | None = session.info.get(SCOPE_KEY)
    if scope is None:
        return
    connection.execute(_APPLY, {
        "tenant_key": TENANT_SETTING, "tenant": scope.tenant_id or "",
        "system_key": SYSTEM_SETTING, "system": "on" if scope.system else "off",
        "job_key": JOB_SETTING, "job": scope.job_id or "",
    })


@asynccontextmanager
async def scoped_transaction(sessionmaker: async_sessionmaker[AsyncSession],
                             scope: Scope) -> AsyncIterator[AsyncSession]:
    """A session of its own in one transaction in `scope`: committed on success."""
    async with sessionmaker() as session, session.begin():
        yield scope_session(session, scope)


@asynccontextmanager
async def side_session(session: AsyncSession) -> AsyncIterator[AsyncSession]:
    """A session of its own in `session`'s scope: a read made before the model runs gives its
    connection back at once instead of holding the request's transaction open."""
    async with AsyncSession(session.bind, info=dict(session.info)) as side:
        yield side
