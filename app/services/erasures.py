"""Erasure requests: checking and queueing one, the rows its selector names, the phases the
job runs in (app/worker/erasure.py), and a preview of what it would delete."""

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import InvalidInput, NotFound
from app.core.text import normalise_key
from app.models import Job
from app.repositories import entities as entity_rows
from app.repositories import erasure as erasure_rows
from app.repositories import erasure_batches as batch_rows
from app.repositories import graph as graph_rows
from app.repositories import runs as run_rows
from app.repositories.erasure import Counts
from app.repositories.erasure_batches import ErasureSelector
from app.schemas.erasures import ErasureCreate
from app.services import butler_limits, entities, jobs

Select = Callable[..., Awaitable[list[uuid.UUID]]]


async def request_erasure(session: AsyncSession, *, tenant_id: str, request: ErasureCreate) -> Job:
    """Check the request and queue the erasure job (Forbidden for a key limited to butlers)."""
    butler_limits.check_unlimited("erasure")
    if request.tenant and request.confirm != tenant_id:
        raise InvalidInput(
            f"erasing a whole tenant needs confirm set to the tenant id ({tenant_id!r})",
            field="confirm",
        )
    if (
        request.entity_id is not None
        and await entity_rows.get(session, tenant_id=tenant_id, entity_id=request.entity_id) is None
    ):
        raise NotFound(f"entity {request.entity_id} not found", field="entity_id")
    if request.run_id is not None and not await run_rows.get_runs(
        session, tenant_id=tenant_id, run_ids=[request.run_id]
    ):
        raise NotFound(f"run {request.run_id} not found", field="run_id")
    params = request.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    params.pop("confirm", None)
    return await jobs.enqueue(session, tenant_id=tenant_id, kind="erasure", params=params)


def selector(params: dict[str, Any]) -> ErasureSelector:
    """The rows an erasure job's params select."""
    entity_id = params.get("entity_id")
    session_id = params.get("session_id")
    subject = params.get("subject")
    return ErasureSelector(
        butler=params.get("butler"),
        scope=params.get("scope"),
        subject_key=normalise_key(subject) if subject is not None else None,
        entity_ids=(uuid.UUID(entity_id),) if entity_id else None,
        session_id=session_id,
        run_ids=(uuid.UUID(params["run_id"]),) if params.get("run_id") else None,
        task_id=params.get("task_id"),
        whole_tenant=bool(params.get("tenant")),
    )


Erased = tuple[Sequence[uuid.UUID], Counts]


async def _facts(session: AsyncSession, tenant_id: str, ids: Sequence[uuid.UUID]) -> Erased:
    versions = await erasure_rows.fact_versions(session, tenant_id=tenant_id, ids=ids)
    return versions, await erasure_rows.delete_facts(session, tenant_id=tenant_id, ids=versions)


async def _rules(session: AsyncSession, tenant_id: str, ids: Sequence[uuid.UUID]) -> Erased:
    return ids, await erasure_rows.delete_rules(session, tenant_id=tenant_id, ids=ids)


async def _procedures(session: AsyncSession, tenant_id: str, ids: Sequence[uuid.UUID]) -> Erased:
    versions = await erasure_rows.procedure_versions(session, tenant_id=tenant_id, ids=ids)
    return versions, await erasure_rows.delete_procedures(
        session, tenant_id=tenant_id, ids=versions
    )


async def _runs(session: AsyncSession, tenant_id: str, ids: Sequence[uuid.UUID]) -> Erased:
    return ids, await erasure_rows.delete_runs(session, tenant_id=tenant_id, ids=ids)


async def _episodes(session: AsyncSession, tenant_id: str, ids: Sequence[uuid.UUID]) -> Erased:
    return ids, await erasure_rows.delete_episodes(session, tenant_id=tenant_id, ids=ids)


async def _entities(session: AsyncSession, tenant_id: str, ids: Sequence[uuid.UUID]) -> Erased:
    return ids, await erasure_rows.delete_entities(session, tenant_id=tenant_id, ids=ids)


# (memory type of the tombstone, batch selection, deletion), in the order they run: facts,
# rules and procedures before the episodes or runs they were learned from, entities once
# their facts are gone.
PHASES: tuple[tuple[str, Select, Callable[..., Awaitable[Erased]]], ...] = (
    ("fact", batch_rows.next_facts, _facts),
    ("rule", batch_rows.next_rules, _rules),
    ("procedure", batch_rows.next_procedures, _procedures),
    ("run", batch_rows.next_runs, _runs),
    ("episode", batch_rows.next_episodes, _episodes),
    ("entity", batch_rows.next_entities, _entities),
)


PREVIEW_LIMIT = 200


@dataclass(frozen=True)
class DoomedItem:
    """One record the erasure would delete: its type, id, a short text and its state."""

    memory_type: str
    id: str
    summary: str
    state: str


@dataclass(frozen=True)
class ErasurePreview:
    """The records the selector matches now, per type; `more` when a type has more than
    `PREVIEW_LIMIT` (the job erases them all)."""

    selector: str
    value: str
    items: list[DoomedItem] = field(default_factory=list)
    more: list[str] = field(default_factory=list)


async def preview_erasure(
    session: AsyncSession, *, tenant_id: str, request: ErasureCreate
) -> ErasurePreview:
    """Name what `request` would erase, without erasing anything (404 for an unknown entity)."""
    butler_limits.check_unlimited("erasure")
    if request.tenant:
        raise InvalidInput("a whole tenant's erasure is not previewed", field="tenant")
    name = request.selector()
    params = request.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    sel = selector(params)
    if request.entity_id is not None:
        await entities.get_entity(session, tenant_id=tenant_id, entity_id=request.entity_id)
        family = await erasure_rows.entity_family(
            session, tenant_id=tenant_id, ids=[request.entity_id]
        )
        sel = ErasureSelector(entity_ids=tuple(family) or (request.entity_id,))
    preview = ErasurePreview(selector=name, value=str(params[name]))
    for memory_type, select, _ in PHASES:
        ids = await select(session, tenant_id=tenant_id, sel=sel, limit=PREVIEW_LIMIT + 1)
        if memory_type == "fact":
            ids = await erasure_rows.fact_versions(session, tenant_id=tenant_id, ids=ids)
        if len(ids) > PREVIEW_LIMIT:
            preview.more.append(memory_type)
        shown = sorted(ids)[:PREVIEW_LIMIT]
        texts = await graph_rows.summaries(
            session, tenant_id=tenant_id, nodes=[(memory_type, i) for i in shown]
        )
        for item_id in shown:
            summary, state = texts.get((memory_type, item_id), ("", ""))
            preview.items.append(DoomedItem(memory_type, str(item_id), summary, state))
    return preview
