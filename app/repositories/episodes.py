"""SQL particular to episodes: the listing and existence checks."""

import uuid
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode
from app.repositories import pagination


@dataclass(frozen=True)
class EpisodeFilters:
    """What an episode listing keeps; None means any."""

    butler: str | None = None
    session_id: uuid.UUID | None = None
    consolidation_status: str | None = None
    consolidated: bool | None = None
    include_expired: bool = False


def not_expired() -> ColumnElement[bool]:
    """Episodes whose TTL has not run out."""
    return Episode.expires_at.is_(None) | (Episode.expires_at > func.now())


async def list_episodes(session: AsyncSession, *, tenant_id: str, filters: EpisodeFilters,
                        limit: int, cursor: str | None) -> tuple[list[Episode], str | None]:
    """A page of the tenant's episodes matching `filters`, newest first."""
    stmt = select(Episode).where(Episode.tenant_id == tenant_id)
    if filters.butler is not None:
        stmt = stmt.where(Episode.butler == filters.butler)
    if filters.session_id is not None:
        stmt = stmt.where(Episode.session_id == filters.session_id)
    if filters.consolidation_status is not None:
        stmt = stmt.where(Episode.consolidation_status == filters.consolidation_status)
    if filters.consolidated is not None:
        stmt = stmt.where(Episode.consolidated == filters.consolidated)
    if not filters.include_expired:
        stmt = stmt.where(not_expired())
    return await pagination.list_page(session, stmt, order=(Episode.created_at, Episode.id),
                                      limit=limit, cursor=cursor)


async def episode_exists(session: AsyncSession, *, tenant_id: str,
                         episode_id: uuid.UUID) -> bool:
    """True when the tenant has this episode."""
    stmt = select(func.count()).select_from(Episode).where(
        Episode.id == episode_id, Episode.tenant_id == tenant_id)
    return bool((await session.execute(stmt)).scalar_one())
