"""Fact requests and responses."""

import uuid
from typing import Any

from pydantic import AliasChoices, Field

from app.schemas.common import (
    AwareDatetimeIn,
    ClientMetadata,
    Content,
    Importance,
    IsoDatetime,
    Language,
    Name,
    Page,
    Permanence,
    Reason,
    RequestModel,
    ResponseModel,
    Tags,
    UUIDIn,
    Validity,
)
from app.schemas.listing import IsoTime, ListQuery, ListText, PageCursor, PageLimit


class FactListQuery(ListQuery):
    """Which facts a listing shows, at which point in time, and its page."""

    subject: ListText = None
    predicate: ListText = None
    scope: ListText = None
    validity: Validity | None = Field(
        None, description="Default: active (at a point in time: any)."
    )
    entity_id: uuid.UUID | None = None
    as_of: IsoTime | None = Field(
        None, description="Valid time: the fact versions that held at this moment (default: now)."
    )
    known_at: IsoTime | None = Field(
        None, description="Record time: as Engram believed them at this moment (default: now)."
    )
    limit: PageLimit = 50
    cursor: PageCursor = None


class FactCreate(RequestModel):
    """Durable subject/predicate knowledge; an active fact with the same key is superseded,
    an identical one (same key and content) is confirmed instead."""

    subject: Name = Field(
        description="Compared case-folded (NFKC, whitespace collapsed) in "
        "the supersession key; stored as given."
    )
    predicate: Name = Field(description="Compared like subject.")
    content: Content
    importance: Importance = 5.0
    permanence: Permanence = Field(
        "standard",
        description="Decay per day: permanent 0, stable 0.002, standard 0.008, "
        "volatile 0.03, ephemeral 0.1.",
    )
    scope: Name = "global"
    tags: Tags = Field(default_factory=list)
    entity_id: UUIDIn | None = Field(
        None, description="Anchor entity; the supersession key becomes (entity, scope, predicate)."
    )
    source_butler: Name | None = None
    source_episode_id: UUIDIn | None = None
    metadata: ClientMetadata = Field(default_factory=dict)
    language: Language | None = None
    valid_from: AwareDatetimeIn | None = Field(
        None,
        description="When the fact started to hold in the world; default: now. A "
        "version starting before the key's current one is history: it goes in at its place "
        "and the current version stays current.",
    )
    valid_until: AwareDatetimeIn | None = Field(
        None,
        description="When it stopped holding; default: open-ended, until the next "
        "version of the key starts.",
    )


class FactOut(ResponseModel):
    id: uuid.UUID
    subject: str
    predicate: str
    content: str
    importance: float
    confidence: float
    effective_confidence: float = Field(
        description="confidence * exp(-decay_rate * days since last confirmation)"
    )
    decay_rate: float
    permanence: Permanence
    source_butler: str | None
    source_episode_id: uuid.UUID | None
    supersedes_id: uuid.UUID | None
    entity_id: uuid.UUID | None
    validity: Validity
    scope: str
    reference_count: int
    validation_count: int = Field(
        description="Confirmations (confirm, the same fact stored "
        "again) and `supports` links to this fact."
    )
    contradiction_count: int = Field(
        description="`contradicts` links to this fact and "
        "contradict calls; each halved its confidence."
    )
    created_at: IsoDatetime
    last_referenced_at: IsoDatetime | None
    last_confirmed_at: IsoDatetime | None
    fading: bool = Field(
        description="Effective confidence fell below 0.2 at the last sweep "
        "(validity stays 'active')."
    )
    tags: list[str]
    metadata: dict[str, Any] = Field(validation_alias=AliasChoices("metadata_", "metadata"))
    valid_from: IsoDatetime = Field(description="Valid time: when the fact started to hold.")
    valid_until: IsoDatetime | None = Field(
        description="When it stopped holding (the next version's valid_from, or as stated); "
        "null: it still holds."
    )
    recorded_at: IsoDatetime = Field(
        validation_alias=AliasChoices("created_at", "recorded_at"),
        description="Record time: when Engram stored this version (= created_at).",
    )
    recorded_until: IsoDatetime | None = Field(
        description="When Engram stopped believing it (retracted, expired, or corrected for "
        "the same period); null: still believed."
    )


class FactPage(Page[FactOut]):
    """A page of facts; `as_of` and `known_at` say which point in time it was read at."""

    as_of: IsoDatetime | None = Field(
        None,
        description="The valid time the page was read at (facts that held then); null: "
        "no point in time was asked for and the `validity` filter applied.",
    )
    known_at: IsoDatetime | None = Field(
        None,
        description="The record time it was read at (what Engram believed then); null: "
        "what it believes now.",
    )


class FactContradiction(RequestModel):
    """Evidence against a fact, without a memory to link as its source."""

    reasoning: Reason | None = Field(
        None, description="Why the fact no longer holds; kept in the `fact_contradicted` event."
    )
