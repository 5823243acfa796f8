"""The next batch of an erasure: the ids of the tenant's rows a selector matches.

Rows already erased are gone, so asking again after a crash finds exactly what is left: an
erasure resumes by running the same selections again.
"""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.filters import uuid_or_none


@dataclass(frozen=True)
class ErasureSelector:
    """What to erase; exactly one field is set (`whole_tenant` counts as one)."""

    butler: str | None = None
    scope: str | None = None
    subject_key: str | None = None
    entity_ids: tuple[uuid.UUID, ...] | None = None
    session_id: str | None = None
    run_ids: tuple[uuid.UUID, ...] | None = None
    task_id: str | None = None
    whole_tenant: bool = False

    def _inferred(self) -> str | None:
        """The session id as the UUID of an inferred session, if it spells one."""
        found = None if self.session_id is None else uuid_or_none(self.session_id)
        return None if found is None else str(found)

    def origins(self) -> list[str]:
        """The `origins` entries of what was learned from the rows it erases (a whole
        tenant's go without them)."""
        if self.butler is not None:
            return [f"butler:{self.butler}"]
        if self.session_id is not None:
            inferred = self._inferred()
            also = [f"session:{inferred}"] if inferred not in (None, self.session_id) else []
            return [f"session:{self.session_id}", *also]
        if self.run_ids:
            return [f"run:{i}" for i in self.run_ids]
        if self.task_id is not None:
            return [f"task:{self.task_id}"]
        return []

    def params(self) -> dict[str, Any]:
        """The bind parameters its conditions use."""
        return {
            "origins": self.origins(),
            "butler": self.butler,
            "scope": self.scope,
            "subject_key": self.subject_key,
            "entity_ids": [str(i) for i in self.entity_ids or ()],
            "session_id": self.session_id,
            "inferred_session": self._inferred(),
            "run_ids": [str(i) for i in self.run_ids or ()],
            "task_id": self.task_id,
        }


def _episodes(sel: ErasureSelector, alias: str) -> str | None:
    if sel.whole_tenant:
        return "TRUE"
    if sel.butler is not None:
        return f"{alias}.butler = :butler"
    if sel.session_id is not None:
        return (
            f"({alias}.session_id = :session_id "
            f"OR {alias}.inferred_session = CAST(:inferred_session AS uuid))"
        )
    return None


def _learned(sel: ErasureSelector, alias: str) -> list[str]:
    """Facts, rules and procedures learned from what the selector erases go with it: those
    whose `origins` name its butler, session, run or task (kept when cleanup has already
    deleted the episodes or runs they were learned from)."""
    if not sel.origins():
        return []
    return [f"({alias}.origins <> '{{}}' AND {alias}.origins && CAST(:origins AS text[]))"]


def _runs(sel: ErasureSelector, alias: str) -> str | None:
    if sel.run_ids:
        return f"{alias}.id = ANY(CAST(:run_ids AS uuid[]))"
    if sel.task_id is not None:
        return f"{alias}.task_id = :task_id"
    return None


def _facts(sel: ErasureSelector) -> list[str]:
    if sel.whole_tenant:
        return ["TRUE"]
    own = {
        "f.source_butler = :butler": sel.butler,
        "f.scope = :scope": sel.scope,
        "f.subject_key = :subject_key": sel.subject_key,
        "f.entity_id = ANY(CAST(:entity_ids AS uuid[]))": sel.entity_ids,
    }
    return [condition for condition, value in own.items() if value is not None] + _learned(sel, "f")


def _rules(sel: ErasureSelector) -> list[str]:
    if sel.whole_tenant:
        return ["TRUE"]
    own = {"r.source_butler = :butler": sel.butler, "r.scope = :scope": sel.scope}
    return [condition for condition, value in own.items() if value is not None] + _learned(sel, "r")


def _entities(sel: ErasureSelector) -> list[str]:
    if sel.whole_tenant:
        return ["TRUE"]
    return ["n.id = ANY(CAST(:entity_ids AS uuid[]))"] if sel.entity_ids else []


async def _ids(
    session: AsyncSession,
    table: str,
    conditions: list[str],
    extra: str,
    *,
    tenant_id: str,
    sel: ErasureSelector,
    limit: int,
) -> list[uuid.UUID]:
    if not conditions:
        return []
    where = " OR ".join(f"({condition})" for condition in conditions)
    rows = await session.execute(
        text(
            f"SELECT id FROM {table} WHERE tenant_id = :tenant_id AND ({where}) {extra} "
            "ORDER BY id LIMIT :limit FOR UPDATE"
        ),
        {"tenant_id": tenant_id, "limit": limit, **sel.params()},
    )
    return [row[0] for row in rows]


async def next_facts(
    session: AsyncSession, *, tenant_id: str, sel: ErasureSelector, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` facts the selector erases (before their histories are added)."""
    return await _ids(
        session, "facts f", _facts(sel), "", tenant_id=tenant_id, sel=sel, limit=limit
    )


async def next_rules(
    session: AsyncSession, *, tenant_id: str, sel: ErasureSelector, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` rules the selector erases."""
    return await _ids(
        session, "rules r", _rules(sel), "", tenant_id=tenant_id, sel=sel, limit=limit
    )


async def next_procedures(
    session: AsyncSession, *, tenant_id: str, sel: ErasureSelector, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` procedures learned from what the selector erases (before their
    other versions are added); a whole tenant's go with its other records."""
    return await _ids(
        session, "procedures p", _learned(sel, "p"), "", tenant_id=tenant_id, sel=sel, limit=limit
    )


async def _ids_where(
    session: AsyncSession,
    table: str,
    condition: str | None,
    *,
    tenant_id: str,
    sel: ErasureSelector,
    limit: int,
) -> list[uuid.UUID]:
    """`_ids` under one condition, or none."""
    return await _ids(
        session,
        table,
        [condition] if condition else [],
        "",
        tenant_id=tenant_id,
        sel=sel,
        limit=limit,
    )


async def next_episodes(
    session: AsyncSession, *, tenant_id: str, sel: ErasureSelector, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` episodes the selector erases."""
    return await _ids_where(
        session, "episodes e", _episodes(sel, "e"), tenant_id=tenant_id, sel=sel, limit=limit
    )


async def next_entities(
    session: AsyncSession, *, tenant_id: str, sel: ErasureSelector, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` entities the selector erases, tombstones before what they were merged
    into (no other entity points at one of the batch)."""
    leaves = (
        "AND NOT EXISTS (SELECT 1 FROM entities t "
        "WHERE t.tenant_id = n.tenant_id AND t.merged_into_id = n.id)"
    )
    return await _ids(
        session, "entities n", _entities(sel), leaves, tenant_id=tenant_id, sel=sel, limit=limit
    )


async def next_runs(
    session: AsyncSession, *, tenant_id: str, sel: ErasureSelector, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` runs the selector erases (a whole tenant's go with its other
    records)."""
    return await _ids_where(
        session, "runs u", _runs(sel, "u"), tenant_id=tenant_id, sel=sel, limit=limit
    )
