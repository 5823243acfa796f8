"""The agent event ledger: append events, post reflections, build an agent's context."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import AgentMemorySettings, Settings
from app.core.errors import InvalidInput
from app.core.text import preprocess_search_query, preprocess_text
from app.embedding import Embedder
from app.formulas import salience
from app.formulas.salience import GLOBAL, REFLECTION_KIND, LedgerEvent, SalienceWeights
from app.models import AgentEvent
from app.repositories import jobs as job_rows
from app.repositories import ledger as ledger_rows
from app.repositories.ledger import EVENT_TYPE, EventFilters
from app.retrieval.query_vectors import embed_query, serving_vector
from app.schemas.ledger import (
    AgentContextRequest,
    AgentEventListQuery,
    EventCreate,
    ReflectionCreate,
)
from app.services import actors, butler_limits, events
from app.services.embeddings import embed_texts
from app.services.events import Event

BASED_ON = "based_on"
PRIVATE = "private"
CHARS_PER_TOKEN = 4
REFLECTION_JOB = "reflection"


def weights_of(settings: AgentMemorySettings) -> SalienceWeights:
    """The salience weights configured."""
    return SalienceWeights(
        relevance=settings.w_relevance,
        recency=settings.w_recency,
        importance=settings.w_importance,
        recency_lambda=settings.recency_lambda,
        kind_importance=settings.kind_importance,
        default_importance=settings.default_importance,
    )


def ledger_event(row: AgentEvent) -> LedgerEvent:
    """The pure view's copy of a row."""
    return LedgerEvent(
        row.id, row.agent_id, row.kind, row.content, row.turn, row.position, row.visibility
    )


def visibility_of(kind: str, requested: str | None, settings: AgentMemorySettings) -> str:
    """The visibility asked for, else global for the configured kinds, else private."""
    if requested is not None:
        return requested
    return GLOBAL if kind in settings.global_kinds else PRIVATE


def check_writer(ledger: str, agent_id: str) -> None:
    """Refuse a limited key a write for an agent, or to a ledger, outside its butlers.

    Consolidation scopes what it learns from a ledger's reflections to the ledger's name, so
    the ledger is a butler to the limit as the agent is.
    """
    butler_limits.check_butler(agent_id, "agent_id")
    butler_limits.check_butler(ledger, "ledger_name")


@dataclass(frozen=True)
class Appended:
    """An appended event and the agents that are now due a reflection."""

    event: AgentEvent
    reflection_due_for: list[str]


async def append_event(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    settings: Settings,
    ledger: str,
    data: EventCreate,
) -> Appended:
    """Append one event; queue a reflection job for each agent now due one (with an LLM)."""
    check_writer(ledger, data.agent_id)
    if data.kind == REFLECTION_KIND:
        raise InvalidInput(
            f"{REFLECTION_KIND} events are posted as reflections "
            "(POST .../agents/{agent_id}/reflections)",
            field="kind",
        )
    memory = settings.agent_memory
    embedded = await embed_texts(session, embedder, [data.content], tenant_id=tenant_id)
    visibility = visibility_of(data.kind, data.visibility, memory)
    [row] = await ledger_rows.insert_events(
        session,
        [
            {
                "tenant_id": tenant_id,
                "ledger": ledger,
                "agent_id": data.agent_id,
                "kind": data.kind,
                "content": data.content,
                "turn": data.turn,
                "visibility": visibility,
                **embedded.columns(0),
                "search_text": preprocess_text(data.content),
            }
        ],
    )
    due = await _agents_due_a_reflection(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        agent_id=data.agent_id,
        visibility=visibility,
        threshold=memory.reflection_threshold,
    )
    if settings.llm.base_url:
        await _queue_reflections(session, tenant_id=tenant_id, ledger=ledger, agents=due)
    await events.record(
        session,
        [
            Event(
                "agent_event_appended",
                tenant_id,
                {
                    "ledger": ledger,
                    "event_id": str(row.id),
                    "agent_id": row.agent_id,
                    "kind": row.kind,
                },
            )
        ],
    )
    return Appended(row, due)


async def _agents_due_a_reflection(
    session: AsyncSession,
    *,
    tenant_id: str,
    ledger: str,
    agent_id: str,
    visibility: str,
    threshold: int,
) -> list[str]:
    """The agents who see a new event and now have `threshold` or more events to reflect on."""
    agents = (
        await ledger_rows.ledger_agents(session, tenant_id=tenant_id, ledger=ledger)
        if visibility == GLOBAL
        else [agent_id]
    )
    counts = await ledger_rows.pending_counts(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        agents=agents,
        reflection_kind=REFLECTION_KIND,
        global_visibility=GLOBAL,
    )
    return sorted(agent for agent, pending in counts.items() if pending >= threshold)


async def _queue_reflections(
    session: AsyncSession, *, tenant_id: str, ledger: str, agents: list[str]
) -> None:
    """Queue a reflection job for each agent that has no open one."""
    for agent in agents:
        params = {"ledger": ledger, "agent_id": agent}
        if not await job_rows.open_job_exists(
            session, tenant_id=tenant_id, kind=REFLECTION_JOB, params=params
        ):
            await job_rows.enqueue(
                session,
                tenant_id=tenant_id,
                kind=REFLECTION_JOB,
                params=params,
                actor_key_id=actors.current().key_id,
            )


async def list_events(
    session: AsyncSession, *, tenant_id: str, ledger: str, query: AgentEventListQuery
) -> tuple[list[AgentEvent], str | None]:
    """A page of the ledger, newest first."""
    filters = EventFilters(agent_id=query.agent_id, kind=query.kind)
    return await ledger_rows.list_events(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        filters=filters,
        limit=query.limit,
        cursor=query.cursor,
    )


@dataclass(frozen=True)
class Reflection:
    """A reflection event and the events it is based on."""

    event: AgentEvent
    based_on: list[uuid.UUID]


async def write_reflection(
    session: AsyncSession,
    *,
    tenant_id: str,
    ledger: str,
    agent_id: str,
    belief: str,
    based_on: Sequence[uuid.UUID],
    turn: int | None,
    vectors: dict[str, Any],
) -> Reflection:
    """Append an `agent.reflected` event (globally visible) linked `based_on` its sources.

    Every source must be an event of this ledger the agent can see (InvalidInput on
    `based_on` otherwise).
    """
    sources = await ledger_rows.events_by_id(session, tenant_id=tenant_id, ids=based_on)
    unknown = [
        str(i)
        for i in based_on
        if i not in sources
        or sources[i].ledger != ledger
        or not salience.is_visible(ledger_event(sources[i]), agent_id)
    ]
    if unknown:
        raise InvalidInput(
            f"not events of ledger {ledger!r} visible to {agent_id!r}: {', '.join(unknown[:5])}",
            field="based_on",
        )
    ordered = sorted(dict.fromkeys(based_on), key=lambda i: sources[i].position)
    [row] = await ledger_rows.insert_events(
        session,
        [
            {
                "tenant_id": tenant_id,
                "ledger": ledger,
                "agent_id": agent_id,
                "kind": REFLECTION_KIND,
                "content": belief,
                "turn": turn if turn is not None else max(sources[i].turn for i in ordered),
                "visibility": GLOBAL,
                **vectors,
                "search_text": preprocess_text(belief),
            }
        ],
    )
    await ledger_rows.add_links(
        session,
        [
            {
                "tenant_id": tenant_id,
                "source_type": EVENT_TYPE,
                "source_id": row.id,
                "target_type": EVENT_TYPE,
                "target_id": source_id,
                "relation": BASED_ON,
            }
            for source_id in ordered
        ],
    )
    await events.record(
        session,
        [
            Event(
                "agent_reflected",
                tenant_id,
                {
                    "ledger": ledger,
                    "event_id": str(row.id),
                    "agent_id": agent_id,
                    "based_on": [str(i) for i in ordered],
                },
            )
        ],
    )
    return Reflection(row, ordered)


async def post_reflection(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    ledger: str,
    agent_id: str,
    data: ReflectionCreate,
) -> Reflection:
    """An agent's own reflection."""
    check_writer(ledger, agent_id)
    embedded = await embed_texts(session, embedder, [data.belief], tenant_id=tenant_id)
    await ledger_rows.lock_agent(session, tenant_id=tenant_id, ledger=ledger, agent_id=agent_id)
    return await write_reflection(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        agent_id=agent_id,
        belief=data.belief,
        based_on=data.based_on,
        turn=data.turn,
        vectors=embedded.columns(0),
    )


async def list_reflections(
    session: AsyncSession,
    *,
    tenant_id: str,
    ledger: str,
    agent_id: str | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[Reflection], str | None]:
    """A page of the ledger's reflections, newest first, with what they are based on."""
    rows, next_cursor = await ledger_rows.list_events(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        filters=EventFilters(agent_id=agent_id, kind=REFLECTION_KIND),
        limit=limit,
        cursor=cursor,
    )
    sources = await ledger_rows.based_on(
        session, tenant_id=tenant_id, relation=BASED_ON, reflection_ids=[row.id for row in rows]
    )
    return [Reflection(row, sources[row.id]) for row in rows], next_cursor


@dataclass(frozen=True)
class AgentContext:
    """The fitted view, the rows it names and the reflections' sources."""

    fitted: salience.Fitted
    memory: salience.MemoryView
    rows: dict[uuid.UUID, AgentEvent]
    based_on: dict[uuid.UUID, list[uuid.UUID]]
    token_budget: int


async def agent_context(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    settings: Settings,
    ledger: str,
    agent_id: str,
    request: AgentContextRequest,
) -> AgentContext:
    """The agent's recent window, salient events and reflections within the token budget, as
    the agent had them at `request.turn`: computed from the events of that turn and earlier
    only, so asking about a past turn replays it exactly."""
    memory = settings.agent_memory
    query = preprocess_search_query(request.query)
    asked = (
        await embed_query(embedder, query, tenant_id=tenant_id)
        if request.relevance == "semantic" and query
        else None
    )
    rows = await ledger_rows.viewer_events(
        session,
        tenant_id=tenant_id,
        ledger=ledger,
        agent_id=agent_id,
        global_visibility=GLOBAL,
        max_turn=request.turn,
        limit=memory.max_candidates,
    )
    by_id = {row.id: row for row in rows}
    reflection_ids = [row.id for row in rows if row.kind == REFLECTION_KIND]
    sources = await ledger_rows.based_on(
        session, tenant_id=tenant_id, relation=BASED_ON, reflection_ids=reflection_ids
    )
    relevance = None
    if request.relevance == "semantic":
        relevance = (
            await ledger_rows.similarities(
                session,
                tenant_id=tenant_id,
                ids=list(by_id),
                vector=await serving_vector(session, embedder, asked),
            )
            if asked is not None
            else {}
        )
    view = salience.view(
        [ledger_event(row) for row in rows],
        agent_id=agent_id,
        current_turn=request.turn,
        query=query,
        window=request.window or memory.window,
        k=memory.salience_k if request.k is None else request.k,
        weights=weights_of(memory),
        based_on=sources,
        reflection_threshold=memory.reflection_threshold,
        relevance=relevance,
    )
    budget = request.token_budget or settings.retrieval.context_token_budget
    fitted = salience.fit_to_budget(view, max_chars=budget * CHARS_PER_TOKEN)
    return AgentContext(fitted, view, by_id, sources, budget)
