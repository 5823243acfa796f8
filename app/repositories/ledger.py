"""SQL of the agent event ledger: append, read a viewer's events, reflections' sources."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Float, and_, func, insert, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.models import AgentEvent, MemoryLink
from app.repositories import pagination
from app.repositories.filters import equal, rows_by_id
from app.repositories.memories import insert_rows

EVENT_TYPE = "agent_event"


@dataclass(frozen=True)
class EventFilters:
    """What a ledger listing keeps; None means any."""

    agent_id: str | None = None
    kind: str | None = None


async def insert_events(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> list[AgentEvent]:
    """Append events (each with a `search_text`) and return them in order."""
    return await insert_rows(session, AgentEvent, rows)


async def list_events(
    session: AsyncSession,
    *,
    tenant_id: str,
    ledger: str,
    filters: EventFilters,
    limit: int,
    cursor: str | None,
) -> tuple[list[AgentEvent], str | None]:
    """A page of the ledger's events, newest first."""
    stmt = select(AgentEvent).where(
        AgentEvent.tenant_id == tenant_id,
        AgentEvent.ledger == ledger,
        *equal(AgentEvent, filters, "agent_id", "kind"),
    )
    return await pagination.list_page(
        session, stmt, order=(AgentEvent.created_at, AgentEvent.id), limit=limit, cursor=cursor
    )


async def viewer_events(
    session: AsyncSession,
    *,
    tenant_id: str,
    ledger: str,
    agent_id: str,
    global_visibility: str,
    limit: int,
    max_turn: int | None = None,
) -> list[AgentEvent]:
    """The latest `limit` events of the ledger (of turn `max_turn` or earlier, when given)
    that are the agent's own or have `global_visibility`, in ledger order (the SQL side of
    salience.visible)."""
    turns = [AgentEvent.turn <= max_turn] if max_turn is not None else []
    stmt = (
        select(AgentEvent)
        .where(
            AgentEvent.tenant_id == tenant_id,
            AgentEvent.ledger == ledger,
            *turns,
            or_(AgentEvent.agent_id == agent_id, AgentEvent.visibility == global_visibility),
        )
        .order_by(AgentEvent.position.desc())
        .limit(limit)
    )
    return sorted((await session.execute(stmt)).scalars(), key=lambda e: e.position)


async def ledger_agents(session: AsyncSession, *, tenant_id: str, ledger: str) -> list[str]:
    """Every agent that has written to the ledger."""
    stmt = (
        select(AgentEvent.agent_id)
        .distinct()
        .where(AgentEvent.tenant_id == tenant_id, AgentEvent.ledger == ledger)
        .order_by(AgentEvent.agent_id)
    )
    return list((await session.execute(stmt)).scalars())


async def events_by_id(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, AgentEvent]:
    """The tenant's events by id."""
    return await rows_by_id(session, AgentEvent, tenant_id=tenant_id, ids=ids)


async def based_on(
    session: AsyncSession, *, tenant_id: str, relation: str, reflection_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[uuid.UUID]]:
    """The events each reflection links to with `relation`, in ledger order."""
    found: dict[uuid.UUID, list[uuid.UUID]] = {rid: [] for rid in reflection_ids}
    if not reflection_ids:
        return found
    stmt = (
        select(MemoryLink.source_id, MemoryLink.target_id)
        .join(
            AgentEvent,
            and_(AgentEvent.id == MemoryLink.target_id, AgentEvent.tenant_id == tenant_id),
        )
        .where(
            MemoryLink.tenant_id == tenant_id,
            MemoryLink.source_type == EVENT_TYPE,
            MemoryLink.source_id.in_(list(reflection_ids)),
            MemoryLink.target_type == EVENT_TYPE,
            MemoryLink.relation == relation,
        )
        .order_by(AgentEvent.position)
    )
    for source_id, target_id in (await session.execute(stmt)).all():
        found[source_id].append(target_id)
    return found


async def add_links(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert provenance links (tenant_id, source/target type and id, relation)."""
    if rows:
        await session.execute(insert(MemoryLink), list(rows))


async def similarities(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID], vector: EmbeddingVector
) -> dict[uuid.UUID, float]:
    """Cosine similarity of each event's embedding to `vector` (0 without an embedding)."""
    if not ids:
        return {}
    similarity = (1 - AgentEvent.embedding.cosine_distance(vector)).cast(Float)
    stmt = select(AgentEvent.id, func.coalesce(similarity, 0.0)).where(
        AgentEvent.tenant_id == tenant_id, AgentEvent.id.in_(list(ids))
    )
    return {row[0]: float(row[1]) for row in (await session.execute(stmt)).all()}


async def lock_agent(session: AsyncSession, *, tenant_id: str, ledger: str, agent_id: str) -> None:
    """A transaction-scoped advisory lock on (tenant, ledger, agent): one reflection writer."""
    key = func.hashtextextended(f"{tenant_id}\x1f{ledger}\x1f{agent_id}", 0)
    await session.execute(select(func.pg_advisory_xact_lock(key)))


_PENDING = text("""
    SELECT a.agent_id, (
        SELECT count(*) FROM agent_events e
        WHERE e.tenant_id = :tenant_id AND e.ledger = :ledger AND e.kind <> :reflection_kind
          AND (e.agent_id = a.agent_id OR e.visibility = :global_visibility)
          AND e.position > coalesce((
              SELECT max(r.position) FROM agent_events r
              WHERE r.tenant_id = :tenant_id AND r.ledger = :ledger
                AND r.kind = :reflection_kind AND r.agent_id = a.agent_id), -1)
    ) AS pending
    FROM unnest(CAST(:agents AS text[])) AS a(agent_id)
""")


async def pending_counts(
    session: AsyncSession,
    *,
    tenant_id: str,
    ledger: str,
    agents: Sequence[str],
    reflection_kind: str,
    global_visibility: str,
) -> dict[str, int]:
    """For each agent, its visible events (not reflections) since its last reflection (the
    SQL side of salience.pending_events)."""
    if not agents:
        return {}
    rows = await session.execute(
        _PENDING,
        {
            "tenant_id": tenant_id,
            "ledger": ledger,
            "agents": list(agents),
            "reflection_kind": reflection_kind,
            "global_visibility": global_visibility,
        },
    )
    return {row.agent_id: int(row.pending) for row in rows}
