"""API keys: each bound to one tenant, stored only as a hash."""

import uuid
from datetime import datetime

from sqlalchemy import ARRAY, DateTime, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column, uuid_pk


class ApiKey(Base):
    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = mapped_column(Text, nullable=False)
    name: Mapped[str | None] = mapped_column(Text)
    key_prefix: Mapped[str] = mapped_column(Text, nullable=False)
    key_hash: Mapped[str] = mapped_column(Text, nullable=False, unique=True)
    created_at: Mapped[datetime] = created_at_column()
    # "write" (every operation) or "read" (may look, may not change).
    access: Mapped[str] = mapped_column(Text, nullable=False, server_default="write")
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # NULL: every butler of the tenant; else the only butlers the key reaches (mem_026).
    butlers: Mapped[list[str] | None] = mapped_column(ARRAY(Text))
