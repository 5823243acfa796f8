"""Working memory: get, replace, merge-patch and scratchpad keys, guarded by ETags.

Every use (read or write) moves `expires_at` to now + the record's TTL. An expired record
is never returned, and the cleanup job deletes it. Writes lock the row, so two concurrent
merge patches of different keys both land; If-Match makes a read-modify-write safe.
"""

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.constants import SECONDS_PER_HOUR
from app.core.errors import InvalidInput, NotFound, PreconditionFailed
from app.formulas.merge_patch import apply_merge_patch
from app.models import WorkingMemory
from app.repositories import working_memory as wm_rows
from app.schemas.working_memory import ScratchpadWrite, WorkingMemoryWrite
from app.services import butler_limits


@dataclass(frozen=True)
class Key:
    """Whose working memory: the tenant, the agent and the session."""

    tenant_id: str
    agent_id: str
    session_id: str


def etag_of(row: WorkingMemory) -> str:
    """The strong entity tag of the record's current version."""
    return f'"{row.revision.hex}"'


def if_match_holds(if_match: str | None, row: WorkingMemory | None) -> bool:
    """RFC 9110 If-Match: absent holds; `*` needs a record; otherwise one listed tag must
    equal the record's by strong comparison (weak tags never match)."""
    if if_match is None:
        return True
    if row is None:
        return False
    tags = _tags(if_match)
    return "*" in tags or etag_of(row) in tags


def _require(if_match: str | None, row: WorkingMemory | None) -> None:
    if not if_match_holds(if_match, row):
        raise PreconditionFailed(
            "If-Match does not match the working memory's current ETag; read it again and retry",
            field="If-Match",
        )


def _opaque(tag: str) -> str:
    return tag.removeprefix("W/")


def _tags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",")]


def _create_only(if_none_match: str | None) -> bool:
    return if_none_match is not None and "*" in _tags(if_none_match)


def if_none_match_holds(if_none_match: str | None, row: WorkingMemory | None) -> bool:
    """RFC 9110 If-None-Match: absent holds; `*` holds only while there is no record;
    otherwise no listed tag may equal the record's by weak comparison."""
    if if_none_match is None or row is None:
        return True
    tags = _tags(if_none_match)
    return "*" not in tags and _opaque(etag_of(row)) not in {_opaque(tag) for tag in tags}


def _exists(key: Key) -> PreconditionFailed:
    return PreconditionFailed(
        f"the working memory of agent {key.agent_id!r} session "
        f"{key.session_id!r} exists, or its ETag is listed in "
        "If-None-Match",
        field="If-None-Match",
    )


def _ttl(data: WorkingMemoryWrite, default_ttl_hours: float) -> int:
    if data.ttl_seconds is not None:
        return data.ttl_seconds
    return round(default_ttl_hours * SECONDS_PER_HOUR)


def _values(data: WorkingMemoryWrite, default_ttl_hours: float) -> dict[str, Any]:
    return {
        "active_context": data.active_context,
        "scratchpad": data.scratchpad,
        "retrieved_memory_ids": data.retrieved_memory_ids,
        "decisions": data.decisions,
        "ttl_seconds": _ttl(data, default_ttl_hours),
    }


async def get(session: AsyncSession, *, key: Key) -> WorkingMemory:
    """The live record, its lifetime extended; NotFound when absent or expired."""
    row = await wm_rows.touch_live(
        session, tenant_id=key.tenant_id, agent_id=key.agent_id, session_id=key.session_id
    )
    if row is None:
        raise NotFound(f"no working memory for agent {key.agent_id!r} session {key.session_id!r}")
    return row


async def _lock(session: AsyncSession, key: Key) -> WorkingMemory | None:
    butler_limits.check_butler(key.agent_id, "agent_id")
    return await wm_rows.lock_live(
        session, tenant_id=key.tenant_id, agent_id=key.agent_id, session_id=key.session_id
    )


async def _lock_existing(session: AsyncSession, key: Key, if_match: str | None) -> WorkingMemory:
    row = await _lock(session, key)
    if row is None:
        raise NotFound(f"no working memory for agent {key.agent_id!r} session {key.session_id!r}")
    _require(if_match, row)
    return row


async def replace(
    session: AsyncSession,
    *,
    key: Key,
    data: WorkingMemoryWrite,
    if_match: str | None,
    default_ttl_hours: float,
    if_none_match: str | None = None,
) -> WorkingMemory:
    """Create the record or replace all of it; with If-Match only over that version, with
    If-None-Match only when no record (`*`) or none of those versions is there."""
    butler_limits.check_butler(key.agent_id, "agent_id")
    if if_match is not None or if_none_match is not None:
        row = await _lock(session, key)
        _require(if_match, row)
        if not if_none_match_holds(if_none_match, row):
            raise _exists(key)
    written = await wm_rows.upsert(
        session,
        tenant_id=key.tenant_id,
        agent_id=key.agent_id,
        session_id=key.session_id,
        values=_values(data, default_ttl_hours),
        create_only=_create_only(if_none_match),
    )
    if written is None:
        # Another writer created the record after the check above.
        raise _exists(key)
    return written


def _document(row: WorkingMemory) -> dict[str, Any]:
    return {
        "active_context": row.active_context,
        "scratchpad": row.scratchpad,
        "retrieved_memory_ids": [str(i) for i in row.retrieved_memory_ids],
        "decisions": row.decisions,
        "ttl_seconds": row.ttl_seconds,
    }


def validated(document: dict[str, Any]) -> WorkingMemoryWrite:
    """The document as a write model; InvalidInput naming the first bad field."""
    try:
        return WorkingMemoryWrite.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "body"
        raise InvalidInput(f"{where}: {error['msg']}", field=f"body.{where}") from None


async def merge_patch(
    session: AsyncSession,
    *,
    key: Key,
    patch: dict[str, Any],
    if_match: str | None,
    default_ttl_hours: float,
) -> WorkingMemory:
    """Apply a JSON Merge Patch to the record's document.

    A null top-level member resets it to its default (empty, or the configured TTL); nested
    nulls remove keys. The result must be a valid document (InvalidInput otherwise).
    """
    row = await _lock_existing(session, key, if_match)
    data = validated(apply_merge_patch(_document(row), patch))
    return await wm_rows.write(
        session, tenant_id=row.tenant_id, record_id=row.id, values=_values(data, default_ttl_hours)
    )


async def delete(session: AsyncSession, *, key: Key, if_match: str | None) -> None:
    """Delete the live record; NotFound when absent."""
    row = await _lock_existing(session, key, if_match)
    await wm_rows.remove(session, tenant_id=row.tenant_id, record_id=row.id)


async def get_scratchpad_value(
    session: AsyncSession, *, key: Key, name: str
) -> tuple[WorkingMemory, Any]:
    """The record (lifetime extended) and the value under scratchpad key `name`."""
    row = await get(session, key=key)
    if name not in row.scratchpad:
        raise NotFound(f"scratchpad key {name!r} not found")
    return row, row.scratchpad[name]


async def put_scratchpad_value(
    session: AsyncSession, *, key: Key, name: str, data: ScratchpadWrite, if_match: str | None
) -> WorkingMemory:
    """Store `data.value` under scratchpad key `name`, leaving the other keys alone."""
    row = await _lock_existing(session, key, if_match)
    scratchpad = {**row.scratchpad, name: data.value}
    checked = validated({**_document(row), "scratchpad": scratchpad})
    return await wm_rows.write(
        session,
        tenant_id=row.tenant_id,
        record_id=row.id,
        values={"scratchpad": checked.scratchpad},
    )


async def delete_scratchpad_value(
    session: AsyncSession, *, key: Key, name: str, if_match: str | None
) -> WorkingMemory:
    """Remove scratchpad key `name`; NotFound when the key is absent."""
    row = await _lock_existing(session, key, if_match)
    if name not in row.scratchpad:
        raise NotFound(f"scratchpad key {name!r} not found")
    scratchpad = {k: v for k, v in row.scratchpad.items() if k != name}
    return await wm_rows.write(
        session, tenant_id=row.tenant_id, record_id=row.id, values={"scratchpad": scratchpad}
    )
