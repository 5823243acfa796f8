"""The memory event log: who changed what, when."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Text,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import (
    Base,
    created_at_column,
    jsonb_column,
    uuid_pk,
)


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
