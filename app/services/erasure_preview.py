"""What an erasure request would delete, named before anyone confirms it."""

from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import InvalidInput
from app.repositories import erasure as erasure_rows
from app.repositories import graph as graph_rows
from app.repositories.erasure_batches import ErasureSelector
from app.schemas.erasures import ErasureCreate
from app.services import butler_limits, entities
from app.worker.erasure import PHASES, _selector

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


async def preview_erasure(session: AsyncSession, *, tenant_id: str,
                          request: ErasureCreate) -> ErasurePreview:
    """Name what `request` would erase, without erasing anything (404 for an unknown entity)."""
    butler_limits.check_unlimited("erasure")
    if request.tenant:
        raise InvalidInput("a whole tenant's erasure is not previewed", field="tenant")
    name = request.selector()
    params = request.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    sel = _selector(params)
    if request.entity_id is not None:
        await entities.get_entity(session, tenant_id=tenant_id, entity_id=request.entity_id)
        family = await erasure_rows.entity_family(session, tenant_id=tenant_id,
                                                  ids=[request.entity_id])
        sel = ErasureSelector(entity_ids=tuple(family) or (request.entity_id,))
    preview = ErasurePreview(selector=name, value=str(params[name]))
    for memory_type, select, _ in PHASES:
        ids = await select(session, tenant_id=tenant_id, sel=sel, limit=PREVIEW_LIMIT + 1)
        if memory_type == "fact":
            ids = await erasure_rows.fact_versions(session, tenant_id=tenant_id, ids=ids)
        if len(ids) > PREVIEW_LIMIT:
            preview.more.append(memory_type)
        shown = sorted(ids)[:PREVIEW_LIMIT]
        texts = await graph_rows.summaries(session, tenant_id=tenant_id,
                                           nodes=[(memory_type, i) for i in shown])
        for item_id in shown:
            summary, state = texts.get((memory_type, item_id), ("", ""))
            preview.items.append(DoomedItem(memory_type, str(item_id), summary, state))
    return preview

