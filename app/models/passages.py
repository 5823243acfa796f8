"""Passages: the embedded windows of memories too long for the model's 256 tokens."""

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, Text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, created_at_column, tenant_column, uuid_pk
from app.models.vector import Vector


def _owner(table: str) -> Mapped[uuid.UUID | None]:
    return mapped_column(UUID(as_uuid=True), ForeignKey(f"{table}.id", ondelete="CASCADE"))


class Passage(Base):
    """A vector of part of a memory: `window`, the span [start_char, end_char) of a long
    content; `context`, an episode read after the turns before it in its session.

    Exactly one of episode_id, fact_id, rule_id is set; deleting the memory deletes its
    passages.
    """

    __tablename__ = "passages"

    id: Mapped[uuid.UUID] = uuid_pk()
    tenant_id: Mapped[str] = tenant_column(primary_key=True)
    episode_id: Mapped[uuid.UUID | None] = _owner("episodes")
    fact_id: Mapped[uuid.UUID | None] = _owner("facts")
    rule_id: Mapped[uuid.UUID | None] = _owner("rules")
    # The owner's scope (an episode's butler), set by trigger trg_passages_scope (mem_019).
    scope: Mapped[str | None] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    ordinal: Mapped[int] = mapped_column(Integer, nullable=False)
    start_char: Mapped[int] = mapped_column(Integer, nullable=False)
    end_char: Mapped[int] = mapped_column(Integer, nullable=False)
    embedding: Mapped[Any] = mapped_column(Vector(), deferred=True)
    embedding_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    embedding_next: Mapped[Any] = mapped_column(Vector(), deferred=True)
    embedding_next_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    created_at: Mapped[datetime] = created_at_column()


OWNER_COLUMNS = {"episode": "episode_id", "fact": "fact_id", "rule": "rule_id"}
