"""Episodes: raw observations, as stored."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Integer,
    String,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.core.constants import MAX_SESSION_ID_CHARS
from app.models.base import (
    Base,
    created_at_column,
    metadata_column,
    tenant_column,
    uuid_pk,
)
from app.models.searchable import Searchable


class Episode(Searchable, Base):
    __tablename__ = "episodes"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column(primary_key=True)
    butler: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str | None] = mapped_column(String(MAX_SESSION_ID_CHARS))
    # Stored without a session_id: the session the gap rule gave it (services/episodes).
    inferred_session: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    content: Mapped[str] = mapped_column(Text, nullable=False)
    importance: Mapped[float] = mapped_column(Float, nullable=False, server_default="5.0")
    reference_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    consolidated: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default="false")
    consolidation_status: Mapped[str] = mapped_column(
        String(20), nullable=False, server_default="pending"
    )
    retry_count: Mapped[int] = mapped_column(Integer, nullable=False, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)
    # Consolidation leaves a failed episode alone until then (its backoff); NULL: at once.
    next_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = created_at_column()
    occurred_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, server_default=func.now()
    )
    # Storage order: within a session, the order the turns were stored in.
    sequence: Mapped[int] = mapped_column(
        BigInteger, nullable=False, server_default=text("nextval('episodes_sequence_seq')")
    )
    last_referenced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), server_default=text("now() + interval '7 days'")
    )
    # Set by an explicit forget: cleanup may then delete the episode unconsolidated.
    forgotten_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    metadata_: Mapped[dict[str, Any]] = metadata_column()
    # Set by the PII scrub job when it checked the content and metadata.
    scrubbed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
