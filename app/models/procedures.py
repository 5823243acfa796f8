"""Procedural memory: learned multi-step workflows with execution statistics."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Computed, DateTime, Float, ForeignKey, Integer, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, TenantRecord, created_at_column, jsonb_column
from app.models.searchable import Searchable, origins_column


class Procedure(TenantRecord, Searchable, Base):
    __tablename__ = "procedures"

    agent_id: Mapped[str] = mapped_column(Text, nullable=False)
    name: Mapped[str] = mapped_column(Text, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, server_default="")
    steps: Mapped[list[dict[str, Any]]] = jsonb_column("[]")
    preconditions: Mapped[dict[str, Any]] = jsonb_column("{}")
    postconditions: Mapped[dict[str, Any]] = jsonb_column("{}")
    # [{"memory_type": ..., "memory_id": ...}]: what the procedure was learned from.
    learned_from: Mapped[list[dict[str, str]]] = jsonb_column("[]")
    origins: Mapped[list[str]] = origins_column()
    execution_count: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    success_count: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    # Executions reported with a duration, and the sum of those durations.
    timed_count: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    total_duration_ms: Mapped[int] = mapped_column(BigInteger, nullable=False, server_default="0")
    success_rate: Mapped[float | None] = mapped_column(
        Float,
        Computed(
            "CASE WHEN execution_count > 0 THEN success_count::float8 / execution_count END",
            persisted=True,
        ),
    )
    avg_duration_ms: Mapped[float | None] = mapped_column(
        Float,
        Computed(
            "CASE WHEN timed_count > 0 THEN total_duration_ms::float8 / timed_count END",
            persisted=True,
        ),
    )
    last_executed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default="draft")
    version: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    # Deferred, so a new version's id can be set on the old row before the new row exists.
    superseded_by: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True),
        ForeignKey("procedures.id", ondelete="SET NULL", deferrable=True, initially="DEFERRED"),
    )
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = created_at_column()
