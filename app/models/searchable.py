"""The columns every searchable memory shares, and where a derived memory was learned from."""

from typing import Any

from sqlalchemy import (
    ForeignKey,
    Integer,
    Text,
)
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSVECTOR
from sqlalchemy.orm import Mapped, mapped_column

from app.models.vector import Vector


def origins_column() -> Mapped[list[str]]:
    """Where a derived memory was learned from, as erasure selects it (`butler:<b>`,
    `session:<id>`, `run:<id>`, `task:<id>`): kept by the mem_033 triggers, only added to,
    so it outlives the episodes and runs it names."""
    return mapped_column(ARRAY(Text), nullable=False, server_default="{}")


class Searchable:
    """The columns search reads: the embedding, its model version, the tsvector and the text
    search configuration it was built with (app/core/languages.py)."""

    embedding: Mapped[Any] = mapped_column(Vector(), deferred=True)
    search_vector: Mapped[Any] = mapped_column(TSVECTOR, deferred=True)
    search_config: Mapped[str] = mapped_column(
        REGCONFIG, nullable=False, server_default="english", deferred=True
    )
    embedding_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
    # A second model's vector while the store switches models (or the previous model's,
    # after the switch, until dropped): app/repositories/embedding_switches.py.
    embedding_next: Mapped[Any] = mapped_column(Vector(), deferred=True)
    embedding_next_version_id: Mapped[int | None] = mapped_column(
        Integer, ForeignKey("embedding_versions.id")
    )
