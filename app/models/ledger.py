"""The agent event ledger: append-only; memory views are computed from it."""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, DateTime, ForeignKey, Identity, Integer, Text, func
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, TenantRecord, created_at_column
from app.models.searchable import Searchable


class AgentEvent(TenantRecord, Searchable, Base):
    """One event of a ledger; a reflection is an event of kind `agent.reflected`."""

    __tablename__ = "agent_events"

    ledger: Mapped[str] = mapped_column(Text, nullable=False)
    # Append order within the ledger (turns may repeat).
    position: Mapped[int] = mapped_column(BigInteger, Identity(always=True), nullable=False)
    agent_id: Mapped[str] = mapped_column(Text, nullable=False)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    turn: Mapped[int] = mapped_column(Integer, nullable=False)
    visibility: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = created_at_column()


class ReflectionConsolidation(Base):
    """A reflection the consolidation job has read (mem_020); the event stays in the ledger."""

    __tablename__ = "reflection_consolidations"

    event_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("agent_events.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    consolidated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, server_default=func.now()
    )
