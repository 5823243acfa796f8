"""Operations common to every memory type: get with reference bump, confirm, forget."""

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, InvalidInput, NotFound
from app.models import Episode, Fact, Rule
from app.repositories import events, memories
from app.schemas.episodes import EpisodeOut
from app.schemas.facts import FactOut
from app.schemas.rules import RuleOut
from app.services.lifecycle import effective_confidence

Memory = Episode | Fact | Rule


def now_utc() -> datetime:
    """The current time, timezone-aware."""
    return datetime.now(UTC)


def _columns(row: Memory) -> dict[str, Any]:
    return {attr.key: getattr(row, attr.key) for attr in row.__mapper__.column_attrs
            if attr.key not in ("embedding", "search_vector")}


def fact_out(row: Fact, now: datetime | None = None) -> FactOut:
    """A fact as the API shows it, with its decayed confidence."""
    eff = effective_confidence(row.confidence, row.decay_rate, row.last_confirmed_at,
                               now or now_utc())
    return FactOut.model_validate({**_columns(row), "effective_confidence": eff})


def rule_out(row: Rule, now: datetime | None = None) -> RuleOut:
    """A rule as the API shows it, with its decayed confidence."""
    eff = effective_confidence(row.confidence, row.decay_rate, row.last_confirmed_at,
                               now or now_utc())
    return RuleOut.model_validate({**_columns(row), "effective_confidence": eff})


def episode_out(row: Episode) -> EpisodeOut:
    """An episode as the API shows it."""
    return EpisodeOut.model_validate(row)


async def get_memory(session: AsyncSession, model: type[Memory], *, tenant_id: str,
                     memory_id: uuid.UUID) -> Any:
    """The row, after counting this read as a reference; NotFound when absent."""
    row = await memories.bump_reference(session, model, tenant_id=tenant_id,
                                        memory_id=memory_id)
    if row is None:
        raise NotFound(f"{type_name(model)} {memory_id} not found")
    return row


async def load_for_update(session: AsyncSession, model: type[Memory], *, tenant_id: str,
                          memory_id: uuid.UUID) -> Any:
    """The row locked FOR UPDATE; NotFound when absent."""
    row = await memories.get(session, model, tenant_id=tenant_id, memory_id=memory_id,
                             for_update=True)
    if row is None:
        raise NotFound(f"{type_name(model)} {memory_id} not found")
    return row


async def confirm(session: AsyncSession, model: type[Memory], *, tenant_id: str,
                  memory_id: uuid.UUID) -> Any:
    """Reset the decay timer of an active fact or a live rule."""
    if model is Episode:
        raise InvalidInput("episodes cannot be confirmed; only facts and rules decay",
                           field="memory_type")
    row = await load_for_update(session, model, tenant_id=tenant_id, memory_id=memory_id)
    _require_live(row)
    metadata = dict(row.metadata_)
    if metadata.get("status") == "fading":
        del metadata["status"]
    updated = await memories.update_row(
        session, model, memory_id=memory_id,
        values={"last_confirmed_at": func.now(), "metadata_": metadata},
    )
    await record_event(session, f"{type_name(model)}_confirmed", tenant_id, updated)
    return updated


async def forget(session: AsyncSession, model: type[Memory], *, tenant_id: str,
                 memory_id: uuid.UUID) -> Any:
    """Episode: expire now. Fact: retract. Rule: flag forgotten. Repeating it changes nothing."""
    row = await load_for_update(session, model, tenant_id=tenant_id, memory_id=memory_id)
    if isinstance(row, Episode):
        values: dict[str, Any] = {"expires_at": func.now()}
        already = row.expires_at is not None and row.expires_at <= now_utc()
    elif isinstance(row, Fact):
        values = {"validity": "retracted"}
        already = row.validity == "retracted"
    else:
        values = {"metadata_": {**row.metadata_, "forgotten": True}}
        already = row.metadata_.get("forgotten") is True
    if already:
        return row
    updated = await memories.update_row(session, model, memory_id=memory_id, values=values)
    await record_event(session, f"{type_name(model)}_forgotten", tenant_id, updated)
    return updated


def _require_live(row: Memory) -> None:
    if isinstance(row, Fact) and row.validity != "active":
        raise Conflict(f"fact {row.id} is {row.validity}; only active facts can be confirmed")
    if isinstance(row, Rule) and row.metadata_.get("forgotten") is True:
        raise Conflict(f"rule {row.id} is forgotten")


async def record_event(session: AsyncSession, event_type: str, tenant_id: str, row: Memory,
                       **payload: Any) -> None:
    """Append a memory_events row about `row`."""
    await events.add_event(
        session, event_type=event_type, tenant_id=tenant_id,
        payload={"memory_type": type_name(type(row)), "memory_id": str(row.id), **payload},
    )


def type_name(model: type[Memory]) -> str:
    """The API name of a memory model: episode, fact or rule."""
    return {Episode: "episode", Fact: "fact", Rule: "rule"}[model]
