"""Episodes, facts, rules and the links between them."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSVECTOR, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.core.constants import MAX_SESSION_ID_CHARS
from app.models.base import (
    Base,
    created_at_column,
    jsonb_column,
    metadata_column,
    tenant_column,
    uuid_pk,
)
from app.models.vector import Vector


def origins_column() -> Mapped[list[str]]:
    """Where a derived memory was learned from, as erasure selects it (`butler:<b>`,
    `session:<id>`, `run:<id>`, `task:<id>`): kept by the mem_033 triggers, only added to,
    so it outlives the episodes and runs it names."""
    return mapped_column(ARRAY(Text), nullable=False, server_default="{}")


class Searchable:
    """The columns search reads: the embedding, its model version, the tsvector and the text
    search configuration it was built with (app/core/languages.py)."""

    embedding: Mapped[Any] = mapped_column(Vector(), deferred=True)
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, deferred=True)
    search_config: Mapped[str] = mapped_column(
        REGCONFIG, nullable=False, server_default="english", deferred=True
    )
    embedding_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    # A second model's vector while the store switches models (or the previous model's,
    # after the switch, until dropped): app/repositories/embedding_switches.py.
    embedding_next: Mapped[Any] = mapped_column(Vector(), deferred=True)
    embedding_next_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )


class Episode(Searchable, Base):
    __tablename__ = "episodes"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column()
    butler: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str | None] = mapped_column(String(MAX_SESSION_ID_CHARS))
    # Stored without a session_id: the session the gap rule gave it (services/episodes).
    inferred_session: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    content: Mapped[str] = mapped_column(Text, nullable=False)
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="5.0")
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    consolidated: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    consolidation_status: Mapped[str] = mapped_column(
        String(20), nullable=False, server_default="pending"
    )
    retry_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)
    # Consolidation leaves a failed episode alone until then (its backoff); NULL: at once.
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = created_at_column()
    occurred_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, server_default=func.now()
    )
    # Storage order: within a session, the order the turns were stored in.
    sequence: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=text("nextval('episodes_sequence_seq')")
    )
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), server_default=text("now() + interval '7 days'")
    )
    # Set by an explicit forget: cleanup may then delete the episode unconsolidated.
    forgotten_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    metadata_: Mapped[dict[str, Any]] = metadata_column()
    # Set by the PII scrub job when it checked the content and metadata.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Fact(Searchable, Base):
    __tablename__ = "facts"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column()
    subject: Mapped[str] = mapped_column(Text, nullable=False)
    predicate: Mapped[str] = mapped_column(Text, nullable=False)
    # The supersession key: subject and predicate case-folded, NFKC, whitespace collapsed
    # (app/text.normalise_key); subject and predicate keep the original for display.
    subject_key: Mapped[str] = mapped_column(Text, nullable=False)
    predicate_key: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="5.0")
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="1.0")
    decay_rate: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.008")
    permanence: Mapped[str] = mapped_column(Text, nullable=False, server_default="standard")
    source_butler: Mapped[str | None] = mapped_column(Text)
    source_episode_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("episodes.id", ondelete="SET NULL")
    )
    origins: Mapped[list[str]] = origins_column()
    supersedes_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("facts.id", ondelete="SET NULL")
    )
    entity_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("entities.id", ondelete="RESTRICT")
    )
    validity: Mapped[str] = mapped_column(Text, nullable=False, server_default="active")
    scope: Mapped[str] = mapped_column(Text, nullable=False, server_default="global")
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    # Confirmations and `supports` links; `contradicts` links and contradict calls.
    validation_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    contradiction_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    created_at: Mapped[datetime] = created_at_column()
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Set by the decay sweep when effective confidence fell below the fading threshold.
    fading_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tags: Mapped[list[str]] = jsonb_column("[]")
    metadata_: Mapped[dict[str, Any]] = metadata_column()
    # Valid time: when the fact holds in the world ([valid_from, valid_until), NULL: open).
    valid_from: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, server_default=func.now()
    )
    valid_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Record time: believed from created_at until this (NULL: still believed).
    recorded_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Rule(Searchable, Base):
    __tablename__ = "rules"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column()
    content: Mapped[str] = mapped_column(Text, nullable=False)
    scope: Mapped[str] = mapped_column(Text, nullable=False, server_default="global")
    maturity: Mapped[str] = mapped_column(Text, nullable=False, server_default="candidate")
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.5")
    decay_rate: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.008")
    permanence: Mapped[str] = mapped_column(Text, nullable=False, server_default="standard")
    effectiveness_score: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.0")
    applied_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    success_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    harmful_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    source_episode_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("episodes.id", ondelete="SET NULL")
    )
    source_butler: Mapped[str | None] = mapped_column(Text)
    origins: Mapped[list[str]] = origins_column()
    created_at: Mapped[datetime] = created_at_column()
    last_applied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_evaluated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Lifecycle state the service decides (never read from metadata).
    fading_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    forgotten_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    needs_inversion: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    original_content: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[str]] = jsonb_column("[]")
    metadata_: Mapped[dict[str, Any]] = metadata_column()
    # Set by the PII scrub job when it checked the content and metadata.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class MemoryLink(Base):
    __tablename__ = "memory_links"

    # Part of the key (last, after the ends, as in revision mem_012).
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    source_type: Mapped[str] = mapped_column(Text, primary_key=True)
    source_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    target_type: Mapped[str] = mapped_column(Text, primary_key=True)
    target_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    # Several relations may join one pair: the relation is part of the key (mem_028).
    relation: Mapped[str] = mapped_column(Text, primary_key=True)
    # In (0, 1]: how strongly the ends are related; graph search multiplies it along a path.
    strength: Mapped[float] = mapped_column(Float, nullable=False, server_default="1.0")
    created_at: Mapped[datetime] = created_at_column()
    # Unique; with created_at the listing's total order.
    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), nullable=False, server_default=func.gen_random_uuid()
    )
    reasoning: Mapped[str | None] = mapped_column(Text)
    # Who made the link: an API key (`key:<id>`), a job (`job:<id>`) or the caller's label.
    created_by: Mapped[str | None] = mapped_column(Text)
