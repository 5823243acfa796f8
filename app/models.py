"""SQLAlchemy tables. The schema itself is built by the Alembic revisions, never create_all."""

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    ARRAY,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

EMBEDDING_DIMENSIONS = 384

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _uuid_pk() -> Mapped[uuid.UUID]:
    return mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=text("gen_random_uuid()")
    )


def _tenant() -> Mapped[str]:
    return mapped_column(Text, nullable=False, server_default="default")


def _created_at() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), nullable=False, server_default=func.now())


def _jsonb(default: str) -> Mapped[Any]:
    return mapped_column(JSONB, nullable=False, server_default=text(f"'{default}'::jsonb"))


class Episode(Base):
    __tablename__ = "episodes"

    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[str] = _tenant()
    butler: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    content: Mapped[str] = mapped_column(Text, nullable=False)
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIMENSIONS), deferred=True)
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, deferred=True)
    embedding_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="5.0")
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    consolidated: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    consolidation_status: Mapped[str] = mapped_column(
        String(20), nullable=False, server_default="pending"
    )
    retry_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), server_default=text("now() + interval '7 days'")
    )
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False,
                                                      server_default=text("'{}'::jsonb"))


class Fact(Base):
    __tablename__ = "facts"

    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[str] = _tenant()
    subject: Mapped[str] = mapped_column(Text, nullable=False)
    predicate: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIMENSIONS), deferred=True)
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, deferred=True)
    embedding_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="5.0")
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="1.0")
    decay_rate: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.008")
    permanence: Mapped[str] = mapped_column(Text, nullable=False, server_default="standard")
    source_butler: Mapped[str | None] = mapped_column(Text)
    source_episode_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("episodes.id", ondelete="SET NULL")
    )
    supersedes_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("facts.id", ondelete="SET NULL")
    )
    entity_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("entities.id", ondelete="RESTRICT")
    )
    validity: Mapped[str] = mapped_column(Text, nullable=False, server_default="active")
    scope: Mapped[str] = mapped_column(Text, nullable=False, server_default="global")
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    created_at: Mapped[datetime] = _created_at()
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tags: Mapped[list[str]] = _jsonb("[]")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False,
                                                      server_default=text("'{}'::jsonb"))


class Rule(Base):
    __tablename__ = "rules"

    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[str] = _tenant()
    content: Mapped[str] = mapped_column(Text, nullable=False)
    embedding: Mapped[Any] = mapped_column(Vector(EMBEDDING_DIMENSIONS), deferred=True)
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, deferred=True)
    embedding_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    scope: Mapped[str] = mapped_column(Text, nullable=False, server_default="global")
    maturity: Mapped[str] = mapped_column(Text, nullable=False, server_default="candidate")
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.5")
    decay_rate: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.008")
    permanence: Mapped[str] = mapped_column(Text, nullable=False, server_default="standard")
    effectiveness_score: Mapped[float] = mapped_column(
        Float, nullable=False, server_default="0.0"
    )
    applied_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    success_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    harmful_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    source_episode_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("episodes.id", ondelete="SET NULL")
    )
    source_butler: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _created_at()
    last_applied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_evaluated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tags: Mapped[list[str]] = _jsonb("[]")
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False,
                                                      server_default=text("'{}'::jsonb"))


class MemoryLink(Base):
    __tablename__ = "memory_links"

    tenant_id: Mapped[str] = _tenant()
    source_type: Mapped[str] = mapped_column(Text, primary_key=True)
    source_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    target_type: Mapped[str] = mapped_column(Text, primary_key=True)
    target_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    relation: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = _created_at()


class Entity(Base):
    __tablename__ = "entities"

    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[str] = _tenant()
    canonical_name: Mapped[str] = mapped_column(String, nullable=False)
    entity_type: Mapped[str] = mapped_column(String, nullable=False)
    aliases: Mapped[list[str]] = mapped_column(
        ARRAY(Text), nullable=False, server_default=text("'{}'::text[]")
    )
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, nullable=False,
                                                      server_default=text("'{}'::jsonb"))
    created_at: Mapped[datetime] = _created_at()
    updated_at: Mapped[datetime] = _created_at()


class MemoryEvent(Base):
    __tablename__ = "memory_events"

    id: Mapped[uuid.UUID] = _uuid_pk()
    event_type: Mapped[str] = mapped_column(Text, nullable=False)
    actor: Mapped[str | None] = mapped_column(Text)
    tenant_id: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = _jsonb("{}")
    created_at: Mapped[datetime] = _created_at()


class RuleApplication(Base):
    __tablename__ = "rule_applications"

    id: Mapped[uuid.UUID] = _uuid_pk()
    tenant_id: Mapped[str] = _tenant()
    rule_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("rules.id", ondelete="CASCADE"), nullable=False
    )
    outcome: Mapped[str] = mapped_column(Text, nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    context: Mapped[dict[str, Any]] = _jsonb("{}")
    created_at: Mapped[datetime] = _created_at()


class EmbeddingVersion(Base):
    __tablename__ = "embedding_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    model_name: Mapped[str] = mapped_column(Text, nullable=False)
    model_version: Mapped[str] = mapped_column(Text, nullable=False)
    dimensions: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = _created_at()
