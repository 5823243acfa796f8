"""The agent event ledger (seed 001): append-only; memory views are computed from it."""

import uuid
from datetime import datetime

from sqlalchemy import BigInteger, Identity, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column, uuid_pk
from app.models.memory import Searchable
from app.models.runs import owner_tenant_column


class AgentEvent(Searchable, Base):
    """One event of a ledger; a reflection is an event of kind `agent.reflected`."""

    __tablename__ = "agent_events"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = owner_tenant_column()
    ledger: Mapped[str] = mapped_column(Text, nullable=False)
    # Append order within the ledger (turns may repeat).
    position: Mapped[int] = mapped_column(BigInteger, Identity(always=True), nullable=False)
    agent_id: Mapped[str] = mapped_column(Text, nullable=False)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    turn: Mapped[int] = mapped_column(Integer, nullable=False)
    visibility: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = created_at_column()
