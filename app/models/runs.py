"""Task runs: a run, its messages and the feedback it received."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Float, ForeignKey, Identity, Integer, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, TenantRecord, created_at_column, jsonb_column
from app.models.searchable import Searchable


class Run(TenantRecord, Searchable, Base):
    """One execution of a task by an agent: the episodic record of a task."""

    __tablename__ = "runs"

    task_id: Mapped[str] = mapped_column(Text, nullable=False)
    summary: Mapped[str | None] = mapped_column(Text)
    agent_version: Mapped[str | None] = mapped_column(Text)
    task_version: Mapped[str | None] = mapped_column(Text)
    rubric_version: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[datetime] = created_at_column()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    score_numeric: Mapped[float | None] = mapped_column(Float)
    success: Mapped[bool | None] = mapped_column()
    meta: Mapped[dict[str, Any]] = jsonb_column("{}")
    # Set by the PII scrub job when it checked the summary and meta.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = created_at_column()


class RunMessage(TenantRecord, Searchable, Base):
    """One message of a run, by a planner, executor, critic or human."""

    __tablename__ = "run_messages"

    run_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
    )
    # The order messages were appended in (a batch shares created_at).
    position: Mapped[int] = mapped_column(BigInteger, Identity(always=True), nullable=False)
    role: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    token_count: Mapped[int] = mapped_column(Integer, nullable=False)
    # Set by the PII scrub job when it rewrote the content.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = created_at_column()


class RunFeedback(TenantRecord, Base):
    """A critic's or human's judgement of a run."""

    __tablename__ = "run_feedback"

    run_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
    )
    source: Mapped[str] = mapped_column(Text, nullable=False)
    rating: Mapped[float] = mapped_column(Float, nullable=False)
    rationale: Mapped[str | None] = mapped_column(Text)
    # The candidate rule this feedback became (services/run_lessons), if any.
    lesson_rule_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("rules.id", ondelete="SET NULL")
    )
    # Set by the PII scrub job when it checked the rationale.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = created_at_column()
