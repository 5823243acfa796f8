"""/v1/entities: the identity registry, name resolution and merges."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from app.core.errors import problem_responses
from app.deps import ReadSessionDep, SessionDep, TenantDep
from app.formulas.fact_time import point_in_time
from app.responses.entities import entity_out, merge_out, resolve_out
from app.responses.facts import fact_page_out
from app.responses.pages import page_out
from app.routers.created import locate
from app.routers.params import AsOf, Cursor, EntityFilterQuery, KnownAt, Limit
from app.schemas.common import Page, Validity
from app.schemas.entities import (
    EntityCreate,
    EntityListQuery,
    EntityOut,
    EntityUpdate,
    MergeOut,
    MergeRequest,
    ResolveCandidate,
    ResolveRequest,
)
from app.schemas.facts import FactPage
from app.services import deletion, entities
from app.services.merge import merge_entities

router = APIRouter(prefix="/v1/entities", tags=["entities"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=EntityOut,
    responses=problem_responses(409, 422),
    summary="Create an entity",
)
async def create_entity(
    body: EntityCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
) -> EntityOut:
    """Register an identity anchor for facts.

    `entity_type` is one of person, organization, place, other (422 otherwise, listing them).
    A second entity with the same `canonical_name` and `entity_type` is a 409. The metadata keys
    forgotten, needs_inversion, status, harmful_reasons, original_content and merged_into are
    reserved (422).
    """
    row = await entities.create_entity(session, tenant_id=tenant_id, data=body)
    locate(request, response, f"/v1/entities/{row.id}")
    return entity_out(row)


@router.get(
    "", response_model=Page[EntityOut], responses=problem_responses(422), summary="List entities"
)
async def list_entities(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[EntityListQuery, Query()],
    memory_filter: EntityFilterQuery = None,
) -> Page[EntityOut]:
    """Entities newest first; merged (tombstoned) ones only on request; `filter` keeps those
    it admits."""
    return page_out(
        await entities.list_entities(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        entity_out,
    )


@router.post(
    "/resolve",
    response_model=list[ResolveCandidate],
    responses=problem_responses(422),
    summary="Resolve a name to ranked entities",
)
async def resolve_entity(
    body: ResolveRequest, session: SessionDep, tenant_id: TenantDep
) -> list[ResolveCandidate]:
    """Rank the live entities a name may refer to; never creates one.

    Tiers (case-insensitive): `exact` canonical name 100, `alias` exact alias 80, `prefix`
    name or alias starting with or containing the name 50 (`%`, `_` and `\\` are literal),
    and with `enable_fuzzy` and a name of 3+ characters `fuzzy` trigram similarity >= 0.3 20
    (an empty tier when pg_trgm is not installed). Each entity appears once, in its best tier;
    merged entities never appear. `context_hints.topic` and `mentioned_with` add up to 20 by
    the Jaccard overlap of their words with the words of the candidate's newest 500 active
    facts (predicate and content); `domain_scores` adds its value for that entity. Ordered by
    score descending then canonical name; scores rounded to 4 places. Candidate discovery
    considers at most 100 name matches and 100 fuzzy matches.
    """
    return resolve_out(await entities.resolve_name(session, tenant_id=tenant_id, request=body))


@router.get(
    "/{entity_id}",
    response_model=EntityOut,
    responses=problem_responses(404, 422),
    summary="Get an entity",
)
async def get_entity(
    entity_id: uuid.UUID, session: ReadSessionDep, tenant_id: TenantDep
) -> EntityOut:
    """The entity, including a merged one (its `merged_into_id` names the target)."""
    row = await entities.get_entity(session, tenant_id=tenant_id, entity_id=entity_id)
    return entity_out(row)


@router.patch(
    "/{entity_id}",
    response_model=EntityOut,
    responses=problem_responses(404, 409, 422),
    summary="Update an entity",
)
async def update_entity(
    entity_id: uuid.UUID, body: EntityUpdate, session: SessionDep, tenant_id: TenantDep
) -> EntityOut:
    """`canonical_name` replaces the name, `aliases` replaces the whole list, `metadata` is
    a JSON Merge Patch (RFC 7396): a key set to null is removed, an object is merged into the
    object it replaces, anything else replaces the value; `updated_at` becomes now. A name
    already used by another entity of the same type, or an update of a merged entity, is a
    409.
    """
    row = await entities.update_entity(session, tenant_id=tenant_id, entity_id=entity_id, data=body)
    return entity_out(row)


@router.get(
    "/{entity_id}/facts",
    response_model=FactPage,
    responses=problem_responses(404, 422),
    summary="Facts anchored to an entity",
)
async def entity_facts(
    entity_id: uuid.UUID,
    session: ReadSessionDep,
    tenant_id: TenantDep,
    validity: Annotated[
        Validity | None, Query(description="Default: active (at a point in time: any).")
    ] = None,
    as_of: AsOf = None,
    known_at: KnownAt = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> FactPage:
    """Facts whose `entity_id` is this entity, newest first; active ones unless `validity`
    says otherwise. With `as_of` or `known_at`: the versions that held at `as_of` (default:
    now) as Engram believed at `known_at` (default: now)."""
    return fact_page_out(
        await entities.list_entity_facts(
            session,
            tenant_id=tenant_id,
            entity_id=entity_id,
            validity=validity,
            limit=limit,
            cursor=cursor,
            at=point_in_time(as_of, known_at),
        )
    )


@router.post(
    "/{target_id}/merge",
    response_model=MergeOut,
    responses=problem_responses(404, 409, 422),
    summary="Merge an entity into this one",
)
async def merge_entity(
    target_id: uuid.UUID, body: MergeRequest, session: SessionDep, tenant_id: TenantDep
) -> MergeOut:
    """Fold `source_id` into the target, atomically, with both rows locked FOR UPDATE.

    Every fact of the source is re-anchored to the target. When an active source fact and an
    active target fact share (scope, predicate), the higher confidence wins (the target on a
    tie): the loser becomes `superseded`, the winner's `supersedes_id` points at it and a
    `supersedes` link joins them. The source's name and aliases join the target's aliases
    (case-insensitive, no duplicates); metadata is merged with the target winning; the source
    is tombstoned (`merged_into_id` = target id) and an `entity_merge` event records the
    counts.

    Errors: 404 when either entity is not the tenant's; 422 when source and target are the same
    entity (the request itself is invalid); 409 when the source or the target was already
    merged (the request is valid but conflicts with the entities' current state; it is also
    what the loser of two concurrent merges of the same entity receives).
    """
    result = await merge_entities(
        session, tenant_id=tenant_id, target_id=target_id, source_id=body.source_id
    )
    return merge_out(result)


@router.delete(
    "/{entity_id}",
    status_code=204,
    response_class=Response,
    responses=problem_responses(404, 409, 422),
    summary="Delete an entity for good",
)
async def delete_entity(
    entity_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    facts: Annotated[
        deletion.FactsOfEntity,
        Query(
            description="`detach`: its facts stay, anchored to no entity; `delete`: its facts "
            "go, every version of their history."
        ),
    ] = "detach",
) -> Response:
    """Hard-delete the entity and the entities merged into it (their tombstones).

    With `facts=detach` (the default) a 409 says when an active fact of the entity has the
    key (scope, subject, predicate) of an active fact anchored to no entity. A content-free
    `entity_deleted` event records the ids and the key. 404 when the tenant has no such
    entity.
    """
    await deletion.delete_entity(session, tenant_id=tenant_id, entity_id=entity_id, facts=facts)
    return Response(status_code=204)
