"""Facts: subject / predicate knowledge with confidence, validity and supersession."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    DateTime,
    Float,
    ForeignKey,
    Integer,
    Text,
    func,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import (
    Base,
    created_at_column,
    jsonb_column,
    metadata_column,
    tenant_column,
    uuid_pk,
)
from app.models.searchable import Searchable, origins_column


class Fact(Searchable, Base):
    __tablename__ = "facts"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column(primary_key=True)
    subject: Mapped[str] = mapped_column(Text, nullable=False)
    predicate: Mapped[str] = mapped_column(Text, nullable=False)
    # The supersession key: subject and predicate case-folded, NFKC, whitespace collapsed
    # (app/text.normalise_key); subject and predicate keep the original for display.
    subject_key: Mapped[str] = mapped_column(Text, nullable=False)
    predicate_key: Mapped[str] = mapped_column(Text, nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="5.0")
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="1.0")
    decay_rate: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.008")
    permanence: Mapped[str] = mapped_column(Text, nullable=False, server_default="standard")
    source_butler: Mapped[str | None] = mapped_column(Text)
    source_episode_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("episodes.id", ondelete="SET NULL")
    )
    origins: Mapped[list[str]] = origins_column()
    supersedes_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("facts.id", ondelete="SET NULL")
    )
    entity_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("entities.id", ondelete="RESTRICT")
    )
    validity: Mapped[str] = mapped_column(Text, nullable=False, server_default="active")
    scope: Mapped[str] = mapped_column(Text, nullable=False, server_default="global")
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    # Confirmations and `supports` links; `contradicts` links and contradict calls.
    validation_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    contradiction_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    created_at: Mapped[datetime] = created_at_column()
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Set by the decay sweep when effective confidence fell below the fading threshold.
    fading_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    tags: Mapped[list[str]] = jsonb_column("[]")
    metadata_: Mapped[dict[str, Any]] = metadata_column()
    # Valid time: when the fact holds in the world ([valid_from, valid_until), NULL: open).
    valid_from: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, server_default=func.now()
    )
    valid_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Record time: believed from created_at until this (NULL: still believed).
    recorded_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
