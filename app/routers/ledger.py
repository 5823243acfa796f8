"""/v1/ledgers: the agent event ledger and the memory views computed from it."""

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from app.core.errors import problem_responses
from app.deps import EmbedderDep, SessionDep, SettingsDep, TenantDep
from app.responses.ledger import (
    agent_context_out,
    agent_event_out,
    event_append_out,
    reflection_out,
)
from app.responses.pages import page_out
from app.routers.params import Cursor, Limit, Text
from app.schemas.common import MAX_NAME_CHARS, Page
from app.schemas.ledger import (
    AgentContextOut,
    AgentContextRequest,
    AgentEventListQuery,
    AgentEventOut,
    EventAppendOut,
    EventCreate,
    ReflectionCreate,
    ReflectionOut,
)
from app.services import ledger

router = APIRouter(prefix="/v1/ledgers/{ledger_name}", tags=["ledgers"])

LedgerName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The shared ledger (e.g. one simulation).",
    ),
]
AgentId = Annotated[str, Path(min_length=1, max_length=MAX_NAME_CHARS)]


@router.post(
    "/events",
    status_code=status.HTTP_201_CREATED,
    response_model=EventAppendOut,
    responses=problem_responses(422),
    summary="Append an event to the ledger",
)
async def append_ledger_event(
    ledger_name: LedgerName,
    body: EventCreate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> EventAppendOut:
    """Append one event (append-only: events are never changed). Its visibility defaults to
    global for the configured kinds and private otherwise. When the event makes agents due a
    reflection (`agent_memory.reflection_threshold` visible events since their last one),
    they are named in `reflection_due_for`, and with an LLM configured a `reflection` job is
    queued for each."""
    appended = await ledger.append_event(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        settings=settings,
        ledger=ledger_name,
        data=body,
    )
    return event_append_out(appended)


@router.get(
    "/events",
    response_model=Page[AgentEventOut],
    responses=problem_responses(422),
    summary="List the ledger's events",
)
async def list_ledger_events(
    ledger_name: LedgerName,
    session: SessionDep,
    tenant_id: TenantDep,
    query: Annotated[AgentEventListQuery, Query()],
) -> Page[AgentEventOut]:
    """Every event of the ledger (not one agent's view), newest first."""
    return page_out(
        await ledger.list_events(session, tenant_id=tenant_id, ledger=ledger_name, query=query),
        agent_event_out,
    )


@router.get(
    "/reflections",
    response_model=Page[ReflectionOut],
    responses=problem_responses(422),
    summary="List the ledger's reflections",
)
async def list_reflections(
    ledger_name: LedgerName,
    session: SessionDep,
    tenant_id: TenantDep,
    agent_id: Text = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Page[ReflectionOut]:
    """Reflections newest first, each with the events it is `based_on`."""
    found, next_cursor = await ledger.list_reflections(
        session,
        tenant_id=tenant_id,
        ledger=ledger_name,
        agent_id=agent_id,
        limit=limit,
        cursor=cursor,
    )
    return Page(items=[reflection_out(item) for item in found], next_cursor=next_cursor)


@router.post(
    "/agents/{agent_id}/reflections",
    status_code=status.HTTP_201_CREATED,
    response_model=ReflectionOut,
    responses=problem_responses(422),
    summary="Post an agent's reflection",
)
async def post_reflection(
    ledger_name: LedgerName,
    agent_id: AgentId,
    body: ReflectionCreate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> ReflectionOut:
    """Append an `agent.reflected` event (globally visible) whose belief is `based_on` events
    of this ledger the agent can see; each source gets a `based_on` link. The agent's recent
    window and salient events then leave those events out (compaction: the reflection
    stands for them)."""
    reflection = await ledger.post_reflection(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        ledger=ledger_name,
        agent_id=agent_id,
        data=body,
    )
    return reflection_out(reflection)


@router.post(
    "/agents/{agent_id}/context",
    response_model=AgentContextOut,
    responses=problem_responses(422),
    summary="An agent's memory for its turn",
)
async def agent_context(
    ledger_name: LedgerName,
    agent_id: AgentId,
    body: AgentContextRequest,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> AgentContextOut:
    """What the agent sees (its own events and the globally visible ones):

    * `recent`: the last `window` (8) visible events, without reflections and without the
      events the agent's own reflections are based on;
    * `salient`: the top `k` of the other visible events (again without those the agent's
      own reflections are based on) by
      `w_rel*relevance + w_rec*exp(-lambda*(turn - event turn)) + w_imp*importance(kind)`
      (0.30, 0.40, 0.30, lambda 0.1; relevance is keyword Jaccard with `query`, or cosine
      similarity with `relevance: semantic`), returned in chronological order;
    * `reflections`: every visible reflection.

    The `context` text holds what fits in `token_budget * 4` characters: the newest recent
    events first, then the newest reflections, then the most salient events."""
    context = await ledger.agent_context(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        settings=settings,
        ledger=ledger_name,
        agent_id=agent_id,
        request=body,
    )
    return agent_context_out(context)
