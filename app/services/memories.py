"""Operations common to every memory type: get with reference bump, confirm, forget.

Each returns the row, a rule with its harmful reasons (`rule_reasons.ShownRule`).
"""

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, InvalidInput, NotFound, found
from app.models import Episode, Fact, Rule
from app.repositories import memories as memory_rows
from app.repositories import references
from app.services import butler_limits, events
from app.services.events import Memory, memory_event, type_name
from app.services.rule_reasons import shown_one


def model_for(memory_type: str) -> type[Memory]:
    """The table model of a memory type name: episode, fact or rule."""
    return memory_rows.MODELS[memory_type]


async def get_memory(
    session: AsyncSession, model: type[Memory], *, tenant_id: str, memory_id: uuid.UUID
) -> Any:
    """The row, after counting this read as a reference; NotFound when absent."""
    if references.on_replica(session):
        row = await memory_rows.get(session, model, tenant_id=tenant_id, memory_id=memory_id)
        if row is not None:
            await references.count(session, type_name(model), tenant_id=tenant_id, rows=[row])
    else:
        row = await memory_rows.bump_reference(
            session, model, tenant_id=tenant_id, memory_id=memory_id
        )
    if row is None:
        raise NotFound(f"{type_name(model)} {memory_id} not found")
    return await _shown(session, tenant_id, row)


async def _shown(session: AsyncSession, tenant_id: str, row: Memory) -> Any:
    if isinstance(row, Rule):
        return await shown_one(session, tenant_id=tenant_id, row=row)
    return row


async def load_for_update(
    session: AsyncSession, model: type[Memory], *, tenant_id: str, memory_id: uuid.UUID
) -> Any:
    """The row locked FOR UPDATE; NotFound when absent, Forbidden when a key limited to
    butlers may read it (a global fact or rule) but not change it."""
    row = await memory_rows.get(
        session, model, tenant_id=tenant_id, memory_id=memory_id, for_update=True
    )
    shown = found(row, f"{type_name(model)} {memory_id} not found")
    if isinstance(shown, Fact | Rule):
        butler_limits.check_butler(shown.scope, "scope")
    return shown


async def confirm(
    session: AsyncSession, model: type[Memory], *, tenant_id: str, memory_id: uuid.UUID
) -> Any:
    """Reset the decay timer of an active fact or a live rule; a fact counts one more
    validation."""
    if model is Episode:
        raise InvalidInput(
            "episodes cannot be confirmed; only facts and rules decay", field="memory_type"
        )
    row = await load_for_update(session, model, tenant_id=tenant_id, memory_id=memory_id)
    _require_live(row)
    updated = await memory_rows.confirm_row(
        session, model, tenant_id=tenant_id, memory_id=memory_id
    )
    await events.record(
        session, [memory_event(f"{type_name(model)}_confirmed", tenant_id, updated)]
    )
    return await _shown(session, tenant_id, updated)


async def forget(
    session: AsyncSession, model: type[Memory], *, tenant_id: str, memory_id: uuid.UUID
) -> Any:
    """Episode: expire now. Fact: retract. Rule: flag forgotten. Repeating it changes nothing."""
    row = await load_for_update(session, model, tenant_id=tenant_id, memory_id=memory_id)
    if isinstance(row, Fact):
        already = row.validity == "retracted"
    else:
        already = row.forgotten_at is not None
    if already:
        return await _shown(session, tenant_id, row)
    updated = await memory_rows.forget_row(session, model, tenant_id=tenant_id, memory_id=memory_id)
    await events.record(
        session, [memory_event(f"{type_name(model)}_forgotten", tenant_id, updated)]
    )
    return await _shown(session, tenant_id, updated)


def _require_live(row: Memory) -> None:
    if isinstance(row, Fact) and row.validity != "active":
        raise Conflict(f"fact {row.id} is {row.validity}; only active facts can be confirmed")
    if isinstance(row, Rule) and row.forgotten_at is not None:
        raise Conflict(f"rule {row.id} is forgotten")
