"""Corrections a person makes by hand: a fact's or rule's tags and metadata."""

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import InvalidInput
from app.models import Episode
from app.repositories import memories as memory_rows
from app.schemas.memory_labels import LabelsUpdate
from app.services import events
from app.services.events import Memory, memory_event, type_name
from app.services.memories import load_for_update
from app.services.rule_reasons import shown_one


async def edit_labels(
    session: AsyncSession,
    model: type[Memory],
    *,
    tenant_id: str,
    memory_id: uuid.UUID,
    labels: LabelsUpdate,
) -> Any:
    """Replace the memory's tags and metadata; a `{type}_edited` event names what changed."""
    if model is Episode:
        raise InvalidInput(
            "episodes have no tags; only facts and rules are edited", field="memory_type"
        )
    row = await load_for_update(session, model, tenant_id=tenant_id, memory_id=memory_id)
    changed = [
        name
        for name, old, new in (
            ("tags", row.tags, labels.tags),
            ("metadata", row.metadata_, labels.metadata),
        )
        if old != new
    ]
    if not changed:
        return await _shown(session, tenant_id, row)
    updated = await memory_rows.update_row(
        session,
        model,
        tenant_id=tenant_id,
        memory_id=memory_id,
        values={"tags": labels.tags, "metadata_": labels.metadata},
    )
    await events.record(
        session, [memory_event(f"{type_name(model)}_edited", tenant_id, updated, changed=changed)]
    )
    return await _shown(session, tenant_id, updated)


async def _shown(session: AsyncSession, tenant_id: str, row: Any) -> Any:
    if type_name(type(row)) == "rule":
        return await shown_one(session, tenant_id=tenant_id, row=row)
    return row
