"""Storing and listing episodes."""

import uuid
from datetime import timedelta

from sqlalchemy import ColumnElement, func, literal
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding import Embedder
from app.models import Episode
from app.repositories import events, memories
from app.schemas.episodes import EpisodeCreate
from app.services.embeddings import embed_texts
from app.text import preprocess_text


async def create_episodes(session: AsyncSession, *, tenant_id: str, embedder: Embedder,
                          items: list[EpisodeCreate], ttl_days: float) -> list[Episode]:
    """Store episodes in one transaction, embedded in one batch; they expire after the TTL."""
    embedded = await embed_texts(session, embedder, [item.content for item in items])
    rows = [
        {
            "tenant_id": tenant_id,
            "butler": item.butler,
            "session_id": item.session_id,
            "content": item.content,
            "importance": item.importance,
            "metadata_": item.metadata,
            "embedding": vector,
            "embedding_version_id": embedded.version_id,
            "search_text": preprocess_text(item.content),
        }
        for item, vector in zip(items, embedded.vectors, strict=True)
    ]
    created = await memories.insert_rows(
        session, Episode, rows, expires_at=func.now() + literal(timedelta(days=ttl_days))
    )
    await events.add_events(session, [
        {"event_type": "episode_created", "tenant_id": tenant_id,
         "payload": {"memory_type": "episode", "memory_id": str(row.id), "butler": row.butler}}
        for row in created
    ])
    return created


def episode_filters(*, butler: str | None, session_id: uuid.UUID | None,
                    consolidation_status: str | None, consolidated: bool | None,
                    include_expired: bool) -> list[ColumnElement[bool]]:
    """WHERE clauses of the episode listing."""
    filters: list[ColumnElement[bool]] = []
    if butler is not None:
        filters.append(Episode.butler == butler)
    if session_id is not None:
        filters.append(Episode.session_id == session_id)
    if consolidation_status is not None:
        filters.append(Episode.consolidation_status == consolidation_status)
    if consolidated is not None:
        filters.append(Episode.consolidated == consolidated)
    if not include_expired:
        filters.append((Episode.expires_at.is_(None)) | (Episode.expires_at > func.now()))
    return filters
