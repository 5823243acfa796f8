"""/v1/episodes: raw, short-lived observations."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from app.core.errors import InvalidInput, problem_responses
from app.deps import EmbedderDep, ReadSessionDep, SessionDep, SettingsDep, TenantDep
from app.models import Episode
from app.responses.episodes import episode_out
from app.responses.pages import page_out
from app.routers.created import locate
from app.routers.memory_routes import MemoryRoutes
from app.routers.params import FilterQuery
from app.schemas.common import Page
from app.schemas.episodes import (
    EpisodeBatchCreate,
    EpisodeBatchOut,
    EpisodeCreate,
    EpisodeListQuery,
    EpisodeOut,
)
from app.services import deletion, episodes

router = APIRouter(prefix="/v1/episodes", tags=["episodes"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=EpisodeOut,
    responses=problem_responses(422),
    summary="Store an episode",
)
async def create_episode(
    body: EpisodeCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> EpisodeOut:
    """Store one observation; it expires after the episode TTL (7 days by default)."""
    [row] = await episodes.create_episodes(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        items=[body],
        ttl_days=settings.episode_ttl_days,
        keyword_context=settings.keyword_context,
        mentions=settings.auto_links.mentions,
        session_gap_minutes=(settings.episode_session_gap_minutes),
    )
    locate(request, response, f"/v1/episodes/{row.id}")
    return episode_out(row)


@router.post(
    "/batch",
    status_code=status.HTTP_201_CREATED,
    response_model=EpisodeBatchOut,
    responses=problem_responses(413, 422),
    summary="Store many episodes at once",
)
async def create_episode_batch(
    body: EpisodeBatchCreate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> EpisodeBatchOut:
    """Store up to `max_batch_size` episodes in one transaction: all or none."""
    if len(body.items) > settings.max_batch_size:
        raise InvalidInput(
            f"a batch holds at most {settings.max_batch_size} episodes", field="items"
        )
    rows = await episodes.create_episodes(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        items=body.items,
        ttl_days=settings.episode_ttl_days,
        keyword_context=settings.keyword_context,
        mentions=settings.auto_links.mentions,
        session_gap_minutes=(settings.episode_session_gap_minutes),
    )
    return EpisodeBatchOut(items=[episode_out(row) for row in rows])


@router.get(
    "", response_model=Page[EpisodeOut], responses=problem_responses(422), summary="List episodes"
)
async def list_episodes(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[EpisodeListQuery, Query()],
    memory_filter: FilterQuery = None,
) -> Page[EpisodeOut]:
    """Episodes newest first; expired ones only on request."""
    return page_out(
        await episodes.list_episodes(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        episode_out,
    )


routes = MemoryRoutes(router, "episode", Episode, EpisodeOut, episode_out)
routes.get()
routes.forget(
    summary="Forget an episode",
    doc="""
    Expire the episode now and mark it forgotten; cleanup deletes it later, consolidated
    or not.""",
)


@router.delete(
    "/{episode_id}",
    status_code=204,
    response_class=Response,
    responses=problem_responses(404, 422),
    summary="Delete an episode for good",
)
async def delete_episode(
    episode_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> Response:
    """Hard-delete the episode: its links, keyword postings and audit events go too (facts
    and rules consolidated from it stay, without a source_episode_id), and the turns after it
    in its session no longer find it by its words, nor read it in their context passages. A
    content-free `episode_deleted` event records the id and the key. 404 when the tenant has
    none."""
    await deletion.delete_episode(
        session,
        tenant_id=tenant_id,
        episode_id=episode_id,
        embedder=embedder,
        keyword_context=settings.keyword_context,
    )
    return Response(status_code=204)
