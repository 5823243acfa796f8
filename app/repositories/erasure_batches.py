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

    def params(self) -> dict[str, Any]:
        """The bind parameters its conditions use."""
        return {"butler": self.butler, "scope": self.scope, "subject_key": self.subject_key,
                "entity_ids": [str(i) for i in self.entity_ids or ()],
                "session_id": self.session_id, "inferred_session": self._inferred(),
                "run_ids": [str(i) for i in self.run_ids or ()], "task_id": self.task_id}


def _episodes(sel: ErasureSelector, alias: str) -> str | None:
    if sel.whole_tenant:
        return "TRUE"
    if sel.butler is not None:
        return f"{alias}.butler = :butler"
    if sel.session_id is not None:
        return (f"({alias}.session_id = :session_id "
                f"OR {alias}.inferred_session = CAST(:inferred_session AS uuid))")
    return None


def _derived(sel: ErasureSelector, alias: str, memory_type: str) -> list[str]:
    """Facts, rules and procedures consolidated from the episodes the selector erases go
    with them: those naming one as their source, and those linked `derived_from` one."""
    episodes = _episodes(sel, "e")
    if episodes is None or sel.whole_tenant:
        return []
    linked = (f"EXISTS (SELECT 1 FROM memory_links l JOIN episodes e ON e.id = l.target_id "
              f"WHERE l.tenant_id = :tenant_id AND l.source_type = '{memory_type}' "
              f"AND l.source_id = {alias}.id AND l.target_type = 'episode' "
              f"AND l.relation = 'derived_from' AND e.tenant_id = :tenant_id AND {episodes})")
    if memory_type == "procedure":
        return [linked]
    return [f"{alias}.source_episode_id IN (SELECT e.id FROM episodes e "
            f"WHERE e.tenant_id = :tenant_id AND {episodes})", linked]


def _runs(sel: ErasureSelector, alias: str) -> str | None:
    if sel.run_ids:
        return f"{alias}.id = ANY(CAST(:run_ids AS uuid[]))"
    if sel.task_id is not None:
        return f"{alias}.task_id = :task_id"
    return None


def _lessons(sel: ErasureSelector) -> list[str]:
    """Rules learned from the runs the selector erases: named by their feedback's
    `lesson_rule_id`, or linked `derived_from` one."""
    runs = _runs(sel, "u")
    if runs is None:
        return []
    return [f"EXISTS (SELECT 1 FROM run_feedback fb JOIN runs u ON u.id = fb.run_id "
            f"WHERE fb.tenant_id = :tenant_id AND fb.lesson_rule_id = r.id "
            f"AND u.tenant_id = :tenant_id AND {runs})",
            f"EXISTS (SELECT 1 FROM memory_links l JOIN runs u ON u.id = l.target_id "
            f"WHERE l.tenant_id = :tenant_id AND l.source_type = 'rule' "
            f"AND l.source_id = r.id AND l.target_type = 'run' "
            f"AND l.relation = 'derived_from' AND u.tenant_id = :tenant_id AND {runs})"]


def _facts(sel: ErasureSelector) -> list[str]:
    if sel.whole_tenant:
        return ["TRUE"]
    own = {"f.source_butler = :butler": sel.butler, "f.scope = :scope": sel.scope,
           "f.subject_key = :subject_key": sel.subject_key,
           "f.entity_id = ANY(CAST(:entity_ids AS uuid[]))": sel.entity_ids}
    return [condition for condition, value in own.items() if value is not None] + _derived(
        sel, "f", "fact")


def _rules(sel: ErasureSelector) -> list[str]:
    if sel.whole_tenant:
        return ["TRUE"]
    own = {"r.source_butler = :butler": sel.butler, "r.scope = :scope": sel.scope}
    return [condition for condition, value in own.items() if value is not None] + _derived(
        sel, "r", "rule") + _lessons(sel)


def _entities(sel: ErasureSelector) -> list[str]:
    if sel.whole_tenant:
        return ["TRUE"]
    return ["n.id = ANY(CAST(:entity_ids AS uuid[]))"] if sel.entity_ids else []


async def _ids(session: AsyncSession, table: str, conditions: list[str], extra: str,
               *, tenant_id: str, sel: ErasureSelector, limit: int) -> list[uuid.UUID]:
    if not conditions:
        return []
    where = " OR ".join(f"({condition})" for condition in conditions)
    rows = await session.execute(text(
        f"SELECT id FROM {table} WHERE tenant_id = :tenant_id AND ({where}) {extra} "
        "ORDER BY id LIMIT :limit FOR UPDATE"),
        {"tenant_id": tenant_id, "limit": limit, **sel.params()})
    return [row[0] for row in rows]


async def next_facts(session: AsyncSession, *, tenant_id: str, sel: ErasureSelector,
                     limit: int) -> list[uuid.UUID]:
    """Up to `limit` facts the selector erases (before their histories are added)."""
    return await _ids(session, "facts f", _facts(sel), "", tenant_id=tenant_id, sel=sel,
                      limit=limit)


async def next_rules(session: AsyncSession, *, tenant_id: str, sel: ErasureSelector,
                     limit: int) -> list[uuid.UUID]:
    """Up to `limit` rules the selector erases."""
    return await _ids(session, "rules r", _rules(sel), "", tenant_id=tenant_id, sel=sel,
                      limit=limit)


async def next_procedures(session: AsyncSession, *, tenant_id: str, sel: ErasureSelector,
                          limit: int) -> list[uuid.UUID]:
    """Up to `limit` procedures learned from the episodes the selector erases (before their
    other versions are added); a whole tenant's go with its other records."""
    return await _ids(session, "procedures p", _derived(sel, "p", "procedure"), "",
                      tenant_id=tenant_id, sel=sel, limit=limit)


async def next_episodes(session: AsyncSession, *, tenant_id: str, sel: ErasureSelector,
                        limit: int) -> list[uuid.UUID]:
    """Up to `limit` episodes the selector erases."""
    condition = _episodes(sel, "e")
    return await _ids(session, "episodes e", [condition] if condition else [], "",
                      tenant_id=tenant_id, sel=sel, limit=limit)


async def next_entities(session: AsyncSession, *, tenant_id: str, sel: ErasureSelector,
                        limit: int) -> list[uuid.UUID]:
    """Up to `limit` entities the selector erases, tombstones before what they were merged
    into (no other entity points at one of the batch)."""
    leaves = ("AND NOT EXISTS (SELECT 1 FROM entities t "
              "WHERE t.tenant_id = n.tenant_id AND t.merged_into_id = n.id)")
    return await _ids(session, "entities n", _entities(sel), leaves, tenant_id=tenant_id,
                      sel=sel, limit=limit)


async def next_runs(session: AsyncSession, *, tenant_id: str, sel: ErasureSelector,
                    limit: int) -> list[uuid.UUID]:
    """Up to `limit` runs the selector erases (a whole tenant's go with its other
    records)."""
    condition = _runs(sel, "u")
    return await _ids(session, "runs u", [condition] if condition else [], "",
                      tenant_id=tenant_id, sel=sel, limit=limit)
