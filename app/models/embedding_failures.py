"""The memories the embedding backlog set aside, and the lease of its pass."""

import uuid
from datetime import datetime

from sqlalchemy import DateTime, Integer, SmallInteger, Text, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class EmbeddingFailure(Base):
    """A memory the model failed to embed on its own: tried again after `retry_at`."""

    __tablename__ = "embedding_failures"

    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    memory_type: Mapped[str] = mapped_column(Text, primary_key=True)
    memory_id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, nullable=False)
    retry_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    error: Mapped[str] = mapped_column(Text, nullable=False)


class EmbeddingBacklogLease(Base):
    """The one row saying which server process runs the embedding backlog, until when."""

    __tablename__ = "embedding_backlog_lease"

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True, autoincrement=False)
    holder: Mapped[str] = mapped_column(Text, nullable=False)
    until: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
