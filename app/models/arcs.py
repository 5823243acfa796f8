"""Narrative arcs: coherent sequences of related memories with an outcome and lessons."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, DateTime, Text, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, TenantRecord, created_at_column, jsonb_column
from app.models.searchable import Searchable


class Arc(TenantRecord, Searchable, Base):
    __tablename__ = "arcs"

    scope: Mapped[str] = mapped_column(Text, nullable=False)
    title: Mapped[str] = mapped_column(Text, nullable=False)
    summary: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    arc_type: Mapped[str] = mapped_column(Text, nullable=False)
    entity_ids: Mapped[list[uuid.UUID]] = mapped_column(
        ARRAY(UUID(as_uuid=True)), nullable=False, server_default=text("'{}'::uuid[]")
    )
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # [{"memory_type", "memory_id", "occurred_at", "description"}], oldest appended first.
    key_events: Mapped[list[dict[str, Any]]] = jsonb_column("[]")
    outcome: Mapped[str | None] = mapped_column(Text)
    lessons: Mapped[list[str]] = jsonb_column("[]")
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default="active")
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = created_at_column()
