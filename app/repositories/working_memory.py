"""working_memories: live-record reads that extend the lifetime, upsert, update, expiry."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Float,
    bindparam,
    case,
    delete,
    func,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.scope import transaction_now
from app.models import WorkingMemory


def _expiry(ttl_seconds: Any, now: datetime) -> ColumnElement[Any]:
    """`now` + ttl_seconds seconds, in SQL (`to_timestamp` of epoch seconds: a distributed
    UPDATE refuses `timestamptz + interval`, which is STABLE, beside a column)."""
    return func.to_timestamp(bindparam(None, now.timestamp(), type_=Float) + ttl_seconds)


def _bound(now: datetime) -> ColumnElement[Any]:
    return bindparam(None, now, type_=DateTime(timezone=True))


def _key(tenant_id: str, agent_id: str, session_id: str) -> list[ColumnElement[bool]]:
    return [
        WorkingMemory.tenant_id == tenant_id,
        WorkingMemory.agent_id == agent_id,
        WorkingMemory.session_id == session_id,
    ]


def _live() -> ColumnElement[bool]:
    return WorkingMemory.expires_at > func.now()


async def lock_live(
    session: AsyncSession, *, tenant_id: str, agent_id: str, session_id: str
) -> WorkingMemory | None:
    """The live (unexpired) record, locked FOR UPDATE; None when there is none."""
    stmt = (
        select(WorkingMemory)
        .where(*_key(tenant_id, agent_id, session_id), _live())
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def touch_live(
    session: AsyncSession, *, tenant_id: str, agent_id: str, session_id: str
) -> WorkingMemory | None:
    """Extend the live record's lifetime by its TTL from now and return it (None if none)."""
    stmt = (
        update(WorkingMemory)
        .where(*_key(tenant_id, agent_id, session_id), _live())
        .values(expires_at=_expiry(WorkingMemory.ttl_seconds, await transaction_now(session)))
        .returning(WorkingMemory)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def upsert(
    session: AsyncSession,
    *,
    tenant_id: str,
    agent_id: str,
    session_id: str,
    values: dict[str, Any],
    create_only: bool = False,
) -> WorkingMemory | None:
    """Create the record, or replace every writable field of the existing one.

    Replacing an expired (not yet cleaned up) record starts it afresh: version 1, new id,
    new created_at. With `create_only` a live record is left as it is and None returned, in
    the same statement, so of two concurrent creations exactly one succeeds.
    """
    table = WorkingMemory.__table__
    # The transaction's now(), bound: a distributed upsert's update takes no now().
    at = await transaction_now(session)
    now = _bound(at)
    inserted = insert(WorkingMemory).values(
        tenant_id=tenant_id,
        agent_id=agent_id,
        session_id=session_id,
        expires_at=_expiry(values["ttl_seconds"], at),
        **values,
    )
    expired = table.c.expires_at <= now
    fresh = {name: getattr(inserted.excluded, name) for name in values}

    def when_expired(new: Any, kept: Any) -> ColumnElement[Any]:
        return case((expired, new), else_=kept)

    stmt = (
        inserted.on_conflict_do_update(
            index_elements=["tenant_id", "agent_id", "session_id"],
            set_={
                **fresh,
                # Bound, not gen_random_uuid(): a distributed table's UPDATE takes no
                # volatile function.
                "id": when_expired(literal(uuid.uuid4()), table.c.id),
                "created_at": when_expired(now, table.c.created_at),
                "version": when_expired(1, table.c.version + 1),
                "revision": uuid.uuid4(),
                "updated_at": now,
                "expires_at": inserted.excluded.expires_at,
            },
            where=expired if create_only else None,
        )
        .returning(WorkingMemory)
        .execution_options(populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def write(
    session: AsyncSession, *, tenant_id: str, record_id: uuid.UUID, values: dict[str, Any]
) -> WorkingMemory:
    """Apply `values` to the record as a new version, extending its lifetime."""
    ttl = values.get("ttl_seconds", WorkingMemory.ttl_seconds)
    at = await transaction_now(session)
    stmt = (
        update(WorkingMemory)
        .where(WorkingMemory.tenant_id == tenant_id, WorkingMemory.id == record_id)
        .values(
            **values,
            version=WorkingMemory.version + 1,
            revision=uuid.uuid4(),
            updated_at=_bound(at),
            expires_at=_expiry(ttl, at),
        )
        .returning(WorkingMemory)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one()


async def remove(session: AsyncSession, *, tenant_id: str, record_id: uuid.UUID) -> None:
    """Delete the record."""
    await session.execute(
        delete(WorkingMemory).where(
            WorkingMemory.tenant_id == tenant_id, WorkingMemory.id == record_id
        )
    )


_DELETE_EXPIRED = text("""
    WITH victims AS (
        SELECT id FROM working_memories
        WHERE tenant_id = :tenant_id AND expires_at <= now()
        LIMIT :batch_size
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM working_memories w USING victims v
    WHERE w.tenant_id = :tenant_id AND w.id = v.id
""")


async def tenants_with_expired(session: AsyncSession) -> list[str]:
    """Every tenant holding an expired record (system scope)."""
    stmt = (
        select(WorkingMemory.tenant_id)
        .distinct()
        .where(WorkingMemory.expires_at <= func.now())
        .order_by(WorkingMemory.tenant_id)
    )
    return list((await session.execute(stmt)).scalars())


async def delete_expired_batch(session: AsyncSession, *, tenant_id: str, batch_size: int) -> int:
    """Delete up to `batch_size` of the tenant's expired records."""
    result = await session.execute(
        _DELETE_EXPIRED, {"tenant_id": tenant_id, "batch_size": batch_size}
    )
    return int(result.rowcount)  # type: ignore[attr-defined]
