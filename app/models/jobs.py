"""Durable background jobs: consolidation, decay sweep, episode cleanup."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Integer, Text
from sqlalchemy.dialects.postgresql import JSONB, UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column, jsonb_column, uuid_pk


class Job(Base):
    __tablename__ = "jobs"

    id: Mapped[uuid.UUID] = uuid_pk()
    # NULL marks a system job (from the scheduler) that spans every tenant.
    tenant_id: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    # The API key that enqueued the job; NULL for the scheduler's jobs.
    actor_key_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default="queued")
    params: Mapped[dict[str, Any]] = jsonb_column("{}")
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    # Counts of work committed so far, across attempts (each added in the transaction that
    # did the work), so a re-run job reports everything it did, not only its last attempt.
    progress: Mapped[dict[str, Any]] = jsonb_column("{}")
    errors: Mapped[list[str]] = jsonb_column("[]")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    scheduled_for: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    worker_id: Mapped[str | None] = mapped_column(Text)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = created_at_column()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Worker(Base):
    """A job worker process: who it is and when it last showed it was alive."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    hostname: Mapped[str] = mapped_column(Text, nullable=False)
    pid: Mapped[int] = mapped_column(Integer, nullable=False)
    started_at: Mapped[datetime] = created_at_column()
    heartbeat_at: Mapped[datetime] = created_at_column()
