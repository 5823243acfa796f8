"""Audit tables: memory events, rule applications, embedding versions."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, TenantRecord, created_at_column, jsonb_column, uuid_pk


class MemoryEvent(Base):
    __tablename__ = "memory_events"

    id: Mapped[uuid.UUID] = uuid_pk()
    event_type: Mapped[str] = mapped_column(Text, nullable=False)
    # Who: "key:<id>", "anonymous" (authentication disabled), "job:<id>" or a sweep's name.
    actor: Mapped[str | None] = mapped_column(Text)
    # The API key whose request, or whose enqueued job, caused the event.
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    tenant_id: Mapped[str | None] = mapped_column(Text)
    payload: Mapped[dict[str, Any]] = jsonb_column("{}")
    created_at: Mapped[datetime] = created_at_column()


class RuleApplication(TenantRecord, Base):
    __tablename__ = "rule_applications"

    rule_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("rules.id", ondelete="CASCADE"), nullable=False
    )
    outcome: Mapped[str] = mapped_column(Text, nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    context: Mapped[dict[str, Any]] = jsonb_column("{}")
    created_at: Mapped[datetime] = created_at_column()


class EmbeddingVersion(Base):
    __tablename__ = "embedding_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    model_name: Mapped[str] = mapped_column(Text, nullable=False)
    model_version: Mapped[str] = mapped_column(Text, nullable=False)
    dimensions: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = created_at_column()
