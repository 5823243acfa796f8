"""API keys: minting (the secret is shown once), hashing and resolving to a tenant."""

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import InvalidInput
from app.models.api_keys import ApiKey
from app.repositories import api_keys as api_key_rows

KEY_PREFIX = "egk_"
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class MintedKey:
    """A freshly created key: `secret` is never stored and cannot be shown again."""

    record: ApiKey
    secret: str


def hash_key(secret: str) -> str:
    """SHA-256 of the key; keys are 256-bit random, so a slow hash would add nothing."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


async def create_key(session: AsyncSession, *, tenant_id: str,
                     name: str | None = None) -> MintedKey:
    """Mint a key for `tenant_id` and store its hash."""
    if not TENANT_PATTERN.match(tenant_id):
        raise InvalidInput("tenant must be 1-64 letters, digits, '_', '.' or '-'",
                           field="tenant")
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    record = await api_key_rows.insert(session, tenant_id=tenant_id, name=name,
                                   key_prefix=secret[:12], key_hash=hash_key(secret))
    return MintedKey(record, secret)


async def tenant_for_key(session: AsyncSession, secret: str) -> str | None:
    """The tenant a presented key belongs to; None for unknown or revoked keys."""
    if not secret or len(secret) > 256:
        return None
    return await api_key_rows.tenant_for_hash(session, hash_key(secret))


async def count_live_keys(session: AsyncSession) -> int:
    """How many keys, of any tenant, are not revoked."""
    return await api_key_rows.count_live(session)


async def list_keys(session: AsyncSession, *, tenant_id: str | None) -> list[ApiKey]:
    """Every key, or the tenant's, oldest first (never the secrets)."""
    return await api_key_rows.list_keys(session, tenant_id=tenant_id)


async def revoke_key(session: AsyncSession, *, key_id: uuid.UUID) -> bool:
    """Revoke a live key; False when there is no live key with that id."""
    return await api_key_rows.revoke(session, key_id)
