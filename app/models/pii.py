"""The salt of a tenant's PII hashes (when none is configured)."""

from datetime import datetime

from sqlalchemy import Text
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column


class PiiSalt(Base):
    __tablename__ = "pii_salts"

    tenant_id: Mapped[str] = mapped_column(Text, primary_key=True)
    salt: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = created_at_column()
