"""Rules and the record of their applications."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    Text,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import (
    Base,
    TenantRecord,
    created_at_column,
    jsonb_column,
    metadata_column,
    tenant_column,
    uuid_pk,
)
from app.models.searchable import Searchable, origins_column


class Rule(Searchable, Base):
    __tablename__ = "rules"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column(primary_key=True)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    scope: Mapped[str] = mapped_column(Text, nullable=False, server_default="global")
    maturity: Mapped[str] = mapped_column(Text, nullable=False, server_default="candidate")
    confidence: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.5")
    decay_rate: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.008")
    permanence: Mapped[str] = mapped_column(Text, nullable=False, server_default="standard")
    effectiveness_score: Mapped[float] = mapped_column(Float, nullable=False, server_default="0.0")
    applied_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    success_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    harmful_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    source_episode_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("episodes.id", ondelete="SET NULL")
    )
    source_butler: Mapped[str | None] = mapped_column(Text)
    origins: Mapped[list[str]] = origins_column()
    created_at: Mapped[datetime] = created_at_column()
    last_applied_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_evaluated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Lifecycle state the service decides (never read from metadata).
    fading_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    forgotten_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    needs_inversion: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    original_content: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[str]] = jsonb_column("[]")
    metadata_: Mapped[dict[str, Any]] = metadata_column()
    # Set by the PII scrub job when it checked the content and metadata.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RuleApplication(TenantRecord, Base):
    __tablename__ = "rule_applications"

    rule_id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), ForeignKey("rules.id", ondelete="CASCADE"), nullable=False
    )
    outcome: Mapped[str] = mapped_column(Text, nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    context: Mapped[dict[str, Any]] = jsonb_column("{}")
    created_at: Mapped[datetime] = created_at_column()
