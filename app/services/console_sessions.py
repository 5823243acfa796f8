"""Web console sessions: sign in with an API key, find the session of a cookie, sign out.

Sessions live in the database (not in a signed cookie) so every process and replica agrees on
them with no shared secret to configure, signing out ends them everywhere, and the lookup
joins the key on every request: revoking the key ends its sessions at once.
"""

import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.clock import now_utc
from app.core.scope import SYSTEM, Scope, scoped_transaction
from app.repositories import console_sessions as session_rows
from app.repositories.console_sessions import FoundSession
from app.services.api_keys import TenantCache, hash_key, resolve_key

SESSION_HOURS = 8


@dataclass(frozen=True)
class Opened:
    """A new session: the cookie's token (shown once) and the session itself."""

    token: str
    found: FoundSession


async def open_session(
    sessionmaker: async_sessionmaker[AsyncSession],
    *,
    tenant_id: str,
    key_id: uuid.UUID | None,
    access: str,
) -> Opened:
    """Store a session of `SESSION_HOURS` for the tenant (and key); return its token."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    expires_at = now_utc() + timedelta(hours=SESSION_HOURS)
    async with scoped_transaction(sessionmaker, Scope(tenant_id=tenant_id)) as session:
        await session_rows.insert(
            session,
            tenant_id=tenant_id,
            token_hash=hash_key(token),
            key_id=key_id,
            csrf_token=csrf,
            expires_at=expires_at,
        )
    return Opened(token, FoundSession(tenant_id, key_id, access, csrf, expires_at))


async def sign_in(
    sessionmaker: async_sessionmaker[AsyncSession], cache: TenantCache, secret: str
) -> Opened | None:
    """A session for a live API key; None when the key is unknown or revoked."""
    owner = await resolve_key(sessionmaker, cache, secret)
    if owner is None:
        return None
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        await session_rows.delete_expired(session)
    opened = await open_session(
        sessionmaker, tenant_id=owner.tenant_id, key_id=owner.key_id, access="write"
    )
    # The key's access is read back through the same lookup every later request uses.
    found = await find(sessionmaker, opened.token, keyless_allowed=False)
    return None if found is None else Opened(opened.token, found)


async def find(
    sessionmaker: async_sessionmaker[AsyncSession], token: str | None, *, keyless_allowed: bool
) -> FoundSession | None:
    """The live session of a cookie's token, its key still live; None otherwise."""
    if not token or len(token) > 256:
        return None
    # System scope: the token is what tells the tenant, as a key does.
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        return await session_rows.find_live(
            session, hash_key(token), keyless_allowed=keyless_allowed
        )


async def sign_out(sessionmaker: async_sessionmaker[AsyncSession], token: str | None) -> None:
    """End the session of this token (nothing when there is none)."""
    if not token:
        return
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        await session_rows.delete_by_hash(session, hash_key(token))
