"""Agent event ledger requests and responses."""

import uuid
from typing import Literal

from pydantic import Field

from app.schemas.common import Content, IsoDatetime, Name, RequestModel, ResponseModel, UUIDIn
from app.schemas.listing import ListQuery, ListText, PageCursor, PageLimit

Visibility = Literal["private", "global"]
RelevanceMode = Literal["keyword", "semantic"]
MAX_TURN = 2_147_483_647
MAX_BASED_ON = 1000
MAX_QUERY_CHARS = 4000


class AgentEventListQuery(ListQuery):
    """Which of a ledger's events a listing shows, and its page."""

    agent_id: ListText = None
    kind: ListText = None
    limit: PageLimit = 50
    cursor: PageCursor = None


class EventCreate(RequestModel):
    """One event appended to the ledger."""

    agent_id: Name = Field(description="The agent that produced or observed it.")
    kind: Name = Field(
        description="e.g. agent.spoke, world.observed; `agent.reflected` is "
        "written through the reflections endpoint."
    )
    content: Content
    turn: int = Field(ge=0, le=MAX_TURN)
    visibility: Visibility | None = Field(
        None,
        description="Defaults to global for the configured globally visible kinds "
        "(world.observed, judge.verdict, user.injected, run.started, agent.reflected) and "
        "private otherwise.",
    )


class ReflectionCreate(RequestModel):
    """A belief an agent posts about the events it is based on."""

    belief: Content
    based_on: list[UUIDIn] = Field(
        min_length=1, max_length=MAX_BASED_ON, description="Ids of ledger events the agent can see."
    )
    turn: int | None = Field(
        None, ge=0, le=MAX_TURN, description="Defaults to the latest turn of `based_on`."
    )


class AgentContextRequest(RequestModel):
    """What an agent remembers at a turn."""

    turn: int = Field(
        ge=0,
        le=MAX_TURN,
        description="The current turn: recency is counted "
        "from it and only events of this turn or earlier are read, so a past "
        "turn gives the view the agent had then.",
    )
    query: str = Field(
        "",
        max_length=MAX_QUERY_CHARS,
        description="The current scene; the relevance term compares with it.",
    )
    relevance: RelevanceMode = Field(
        "keyword",
        description="keyword: Jaccard of word sets; semantic: cosine similarity of the embeddings.",
    )
    window: int | None = Field(None, ge=1, le=200, description="Default: agent_memory.window.")
    k: int | None = Field(None, ge=0, le=100, description="Default: agent_memory.salience_k.")
    token_budget: int | None = Field(
        None,
        ge=10,
        le=100_000,
        description="At most token_budget * 4 characters; default retrieval.context_token_budget.",
    )


class AgentEventOut(ResponseModel):
    id: uuid.UUID
    ledger: str
    position: int = Field(description="Append order in the ledger.")
    agent_id: str
    kind: str
    content: str
    turn: int
    visibility: Visibility
    created_at: IsoDatetime


class EventAppendOut(AgentEventOut):
    reflection_due_for: list[str] = Field(
        description="Agents that have now seen enough events for a reflection; with an LLM "
        "configured a reflection job is queued for each."
    )


class ReflectionOut(AgentEventOut):
    based_on: list[uuid.UUID] = Field(description="The events it summarises (links).")


class SalientEventOut(AgentEventOut):
    relevance: float
    recency: float
    importance: float
    salience: float


class AgentContextOut(ResponseModel):
    context: str
    token_budget: int
    characters: int
    recent: list[AgentEventOut] = Field(description="Chronological.")
    salient: list[SalientEventOut] = Field(description="Chronological.")
    reflections: list[ReflectionOut] = Field(description="Chronological.")
    pending_events: int = Field(description="Visible events since the agent's last reflection.")
    reflection_due: bool
