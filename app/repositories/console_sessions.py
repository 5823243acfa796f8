"""console_sessions: open, find (with the key's access), close, sweep expired."""

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import ConsoleSession
from app.models.api_keys import ApiKey


@dataclass(frozen=True)
class FoundSession:
    """A live console session: whose it is, what it may do, its CSRF token."""

    tenant_id: str
    key_id: uuid.UUID | None
    access: str
    csrf_token: str
    expires_at: datetime
    butlers: tuple[str, ...] = ()


async def insert(
    session: AsyncSession,
    *,
    tenant_id: str,
    token_hash: str,
    key_id: uuid.UUID | None,
    csrf_token: str,
    expires_at: datetime,
) -> None:
    """Store a new console session."""
    session.add(
        ConsoleSession(
            tenant_id=tenant_id,
            token_hash=token_hash,
            key_id=key_id,
            csrf_token=csrf_token,
            expires_at=expires_at,
        )
    )
    await session.flush()


async def find_live(
    session: AsyncSession, token_hash: str, *, keyless_allowed: bool
) -> FoundSession | None:
    """The unexpired session of this token hash whose key is not revoked (a keyless session
    only when `keyless_allowed`)."""
    stmt = (
        select(
            ConsoleSession.tenant_id,
            ConsoleSession.key_id,
            ApiKey.access,
            ApiKey.revoked_at,
            ConsoleSession.csrf_token,
            ConsoleSession.expires_at,
            ApiKey.butlers,
        )
        .outerjoin(ApiKey, ApiKey.id == ConsoleSession.key_id)
        .where(ConsoleSession.token_hash == token_hash, ConsoleSession.expires_at > func.now())
    )
    row = (await session.execute(stmt)).one_or_none()
    if row is None:
        return None
    tenant_id, key_id, access, revoked_at, csrf_token, expires_at, butlers = row
    if key_id is None and not keyless_allowed:
        return None
    if key_id is not None and (revoked_at is not None or access is None):
        return None
    return FoundSession(
        tenant_id, key_id, access or "write", csrf_token, expires_at, tuple(butlers or ())
    )


async def delete_by_hash(session: AsyncSession, token_hash: str) -> None:
    """Remove the session of this token hash, if any."""
    await session.execute(delete(ConsoleSession).where(ConsoleSession.token_hash == token_hash))


async def delete_expired(session: AsyncSession) -> None:
    """Remove every expired session."""
    await session.execute(delete(ConsoleSession).where(ConsoleSession.expires_at <= func.now()))
