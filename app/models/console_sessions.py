"""Web console sessions: a signed-in browser, bound to a tenant and the key it signed in with."""

import uuid
from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column, tenant_column, uuid_pk


class ConsoleSession(Base):
    __tablename__ = "console_sessions"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column()
    # SHA-256 of the cookie's random token; the token itself is never stored.
    token_hash: Mapped[str] = mapped_column(Text, nullable=False, unique=True)
    # None only when authentication is disabled (the default tenant, no key).
    key_id: Mapped[uuid.UUID | None] = mapped_column(
        UUID(as_uuid=True), ForeignKey("api_keys.id", ondelete="CASCADE")
    )
    csrf_token: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = created_at_column()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
