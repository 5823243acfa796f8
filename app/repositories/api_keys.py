"""api_keys: lookup by hash, create, list, revoke."""

import uuid

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models.api_keys import ApiKey


async def owner_for_hash(
    session: AsyncSession, key_hash: str
) -> tuple[str, uuid.UUID, str, list[str] | None] | None:
    """(tenant_id, key id, access, butlers) of a live (not revoked) key with this hash."""
    stmt = select(ApiKey.tenant_id, ApiKey.id, ApiKey.access, ApiKey.butlers).where(
        ApiKey.key_hash == key_hash, ApiKey.revoked_at.is_(None)
    )
    row = (await session.execute(stmt)).one_or_none()
    return None if row is None else (row[0], row[1], row[2], row[3])


async def insert(
    session: AsyncSession,
    *,
    tenant_id: str,
    name: str | None,
    key_prefix: str,
    key_hash: str,
    access: str = "write",
    butlers: list[str] | None = None,
) -> ApiKey:
    """Store a new key's hash."""
    key = ApiKey(
        tenant_id=tenant_id,
        name=name,
        key_prefix=key_prefix,
        key_hash=key_hash,
        access=access,
        butlers=butlers,
    )
    session.add(key)
    await session.flush()
    return key


async def list_keys(session: AsyncSession, *, tenant_id: str | None) -> list[ApiKey]:
    """Keys, oldest first, optionally of one tenant."""
    stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if tenant_id is not None:
        stmt = stmt.where(ApiKey.tenant_id == tenant_id)
    return list((await session.execute(stmt)).scalars())


async def revoke(session: AsyncSession, key_id: uuid.UUID) -> bool:
    """Revoke a key now; False when there is no live key with that id."""
    stmt = (
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=func.now())
    )
    result = await session.execute(stmt)
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def count_live(session: AsyncSession) -> int:
    """How many keys are not revoked."""
    stmt = select(func.count()).select_from(ApiKey).where(ApiKey.revoked_at.is_(None))
    return int((await session.execute(stmt)).scalar_one())
