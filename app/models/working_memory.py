"""Working memory: one short-lived record per (agent, session)."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ARRAY, DateTime, Integer, String, Text, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.core.constants import MAX_SESSION_ID_CHARS
from app.models.base import (
    Base,
    created_at_column,
    jsonb_column,
    uuid_pk,
)


class WorkingMemory(Base):
    __tablename__ = "working_memories"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    agent_id: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str] = mapped_column(String(MAX_SESSION_ID_CHARS), nullable=False)
    active_context: Mapped[dict[str, Any]] = jsonb_column("{}")
    scratchpad: Mapped[dict[str, Any]] = jsonb_column("{}")
    retrieved_memory_ids: Mapped[list[uuid.UUID]] = mapped_column(
        ARRAY(UUID(as_uuid=True)), nullable=False, server_default=text("'{}'::uuid[]")
    )
    decisions: Mapped[list[Any]] = jsonb_column("[]")
    # Counts the writes; `revision` is a fresh random token per write and makes the ETag.
    version: Mapped[int] = mapped_column(Integer, nullable=False, server_default="1")
    revision: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), nullable=False, server_default=text("gen_random_uuid()")
    )
    ttl_seconds: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = created_at_column()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
