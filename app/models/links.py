"""Typed, weighted links between memories."""

import uuid
from datetime import datetime

from sqlalchemy import (
    Float,
    Text,
    func,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import (
    Base,
    created_at_column,
)


class MemoryLink(Base):
    __tablename__ = "memory_links"

    # Part of the key (last, after the ends, as in revision mem_012).
    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    source_type: Mapped[str] = mapped_column(Text, primary_key=True)
    source_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    target_type: Mapped[str] = mapped_column(Text, primary_key=True)
    target_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    # Several relations may join one pair: the relation is part of the key (mem_028).
    relation: Mapped[str] = mapped_column(Text, primary_key=True)
    # In (0, 1]: how strongly the ends are related; graph search multiplies it along a path.
    strength: Mapped[float] = mapped_column(Float, nullable=False, server_default="1.0")
    created_at: Mapped[datetime] = created_at_column()
    # Unique; with created_at the listing's total order.
    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), nullable=False, server_default=func.gen_random_uuid()
    )
    reasoning: Mapped[str | None] = mapped_column(Text)
    # Who made the link: an API key (`key:<id>`), a job (`job:<id>`) or the caller's label.
    created_by: Mapped[str | None] = mapped_column(Text)
