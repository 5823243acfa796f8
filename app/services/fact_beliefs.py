"""What is believed of a fact: validations counted, contradictions counted and believed less.

A confirmation or a `supports` link to an active fact adds one to its `validation_count`. A
`contradicts` link to an active fact, or a contradict call, adds one to its
`contradiction_count` and halves its confidence (`formulas/belief.after_contradiction`); once
contradictions exceed validations by three, the fact is retracted. Facts that are no longer
active keep their counts: a link to one changes nothing.
"""

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, NotFound
from app.core.scope import transaction_now
from app.formulas.belief import after_contradiction
from app.models import Fact
from app.repositories import fact_time
from app.repositories import memories as memory_rows
from app.services import events
from app.services.events import memory_event


async def _active_for_update(
    session: AsyncSession, tenant_id: str, fact_id: uuid.UUID
) -> Fact | None:
    """The fact, locked, when it is active; None when it is absent or not active."""
    row = await memory_rows.get(
        session, Fact, tenant_id=tenant_id, memory_id=fact_id, for_update=True
    )
    return row if row is not None and row.validity == "active" else None


async def strengthen(
    session: AsyncSession, *, tenant_id: str, fact_id: uuid.UUID, **why: Any
) -> Fact | None:
    """One more validation of an active fact; None (nothing changes) when it is not active."""
    row = await _active_for_update(session, tenant_id, fact_id)
    if row is None:
        return None
    updated = await memory_rows.update_row(
        session,
        Fact,
        tenant_id=tenant_id,
        memory_id=fact_id,
        values={"validation_count": Fact.validation_count + 1},
    )
    await events.record(
        session,
        [
            memory_event(
                "fact_strengthened",
                tenant_id,
                updated,
                validation_count=updated.validation_count,
                **why,
            )
        ],
    )
    return updated


async def contradict(
    session: AsyncSession, *, tenant_id: str, fact_id: uuid.UUID, **why: Any
) -> Fact:
    """One more contradiction of an active fact (`_contradicted`); NotFound when absent,
    Conflict when it is not active. `why` goes to the events' payload."""
    row = await memory_rows.get(
        session, Fact, tenant_id=tenant_id, memory_id=fact_id, for_update=True
    )
    if row is None:
        raise NotFound(f"fact {fact_id} not found")
    if row.validity != "active":
        raise Conflict(f"fact {fact_id} is {row.validity}; only active facts can be contradicted")
    return await _contradicted(session, tenant_id=tenant_id, row=row, why=why)


async def contradict_if_active(
    session: AsyncSession, *, tenant_id: str, fact_id: uuid.UUID, **why: Any
) -> Fact | None:
    """As `contradict`, but a fact that is absent or not active changes nothing (None)."""
    row = await _active_for_update(session, tenant_id, fact_id)
    if row is None:
        return None
    return await _contradicted(session, tenant_id=tenant_id, row=row, why=why)


async def _contradicted(
    session: AsyncSession, *, tenant_id: str, row: Fact, why: dict[str, Any]
) -> Fact:
    """The confidence halves, and the fact is retracted once contradictions exceed
    validations by three; a `fact_contradicted` event (and a `fact_retracted` one)."""
    after = after_contradiction(
        confidence=row.confidence,
        contradiction_count=row.contradiction_count,
        validation_count=row.validation_count,
    )
    values: dict[str, Any] = {
        "confidence": after.confidence,
        "contradiction_count": after.contradiction_count,
    }
    if after.retracted:
        values |= {
            "validity": "retracted",
            "recorded_until": fact_time.record_end(Fact.created_at, await transaction_now(session)),
        }
    before = row.confidence
    updated = await memory_rows.update_row(
        session, Fact, tenant_id=tenant_id, memory_id=row.id, values=values
    )
    happened = [
        memory_event(
            "fact_contradicted",
            tenant_id,
            updated,
            confidence_before=before,
            confidence_after=after.confidence,
            contradiction_count=after.contradiction_count,
            validation_count=updated.validation_count,
            **why,
        )
    ]
    if after.retracted:
        happened.append(
            memory_event(
                "fact_retracted",
                tenant_id,
                updated,
                reason=f"contradicted {after.contradiction_count} times, validated "
                f"{updated.validation_count} times",
            )
        )
    await events.record(session, happened)
    return updated
