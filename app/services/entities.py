"""Entities: create, read, update, list and resolve names to ranked candidates."""

import uuid
from collections import defaultdict

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, found
from app.formulas import resolve
from app.formulas.fact_time import PointInTime
from app.formulas.merge_patch import apply_merge_patch
from app.formulas.resolve import Candidate
from app.models import Entity
from app.repositories import entities as entity_rows
from app.repositories.entities import EntityFilters
from app.repositories.facts import FactFilters
from app.schemas.entities import EntityCreate, EntityListQuery, EntityUpdate, ResolveRequest
from app.schemas.filters import MemoryFilter
from app.services.facts import FactListing, listing, validity_for

CANDIDATE_CAP = 100


def _duplicate(canonical_name: str, entity_type: str) -> Conflict:
    return Conflict(
        f"an entity named {canonical_name!r} of type {entity_type!r} already exists",
        field="canonical_name",
    )


async def create_entity(session: AsyncSession, *, tenant_id: str, data: EntityCreate) -> Entity:
    """Insert an entity; Conflict when the tenant already has the name with that type."""
    row = await entity_rows.insert_entity(
        session,
        tenant_id=tenant_id,
        canonical_name=data.canonical_name,
        entity_type=data.entity_type,
        aliases=data.aliases,
        metadata=data.metadata,
    )
    if row is None:
        raise _duplicate(data.canonical_name, data.entity_type)
    return row


async def get_entity(session: AsyncSession, *, tenant_id: str, entity_id: uuid.UUID) -> Entity:
    """The entity, tombstoned or not; NotFound when the tenant has none with this id."""
    row = await entity_rows.get(session, tenant_id=tenant_id, entity_id=entity_id)
    return found(row, f"entity {entity_id} not found")


async def update_entity(
    session: AsyncSession, *, tenant_id: str, entity_id: uuid.UUID, data: EntityUpdate
) -> Entity:
    """Replace the name, replace all aliases, merge metadata; updated_at becomes now."""
    row = await entity_rows.get(session, tenant_id=tenant_id, entity_id=entity_id, for_update=True)
    row = found(row, f"entity {entity_id} not found")
    if row.merged_into_id is not None:
        raise Conflict(
            f"entity {entity_id} was merged into {row.merged_into_id}; update the target instead"
        )
    values: dict[str, object] = {}
    if data.canonical_name is not None:
        if await entity_rows.name_taken(
            session,
            tenant_id=tenant_id,
            canonical_name=data.canonical_name,
            entity_type=row.entity_type,
            exclude_id=entity_id,
        ):
            raise _duplicate(data.canonical_name, row.entity_type)
        values["canonical_name"] = data.canonical_name
    if data.aliases is not None:
        values["aliases"] = data.aliases
    if data.metadata is not None:
        values["metadata_"] = apply_merge_patch(row.metadata_, data.metadata)
    return await entity_rows.update_entity(
        session, tenant_id=tenant_id, entity_id=entity_id, values=values
    )


async def resolve_name(
    session: AsyncSession, *, tenant_id: str, request: ResolveRequest
) -> list[Candidate]:
    """Ranked candidates for a name: exact, alias, substring, then (opt-in) fuzzy matches."""
    name = request.name.strip()
    trigram = await entity_rows.prepare_search(session, fuzzy_threshold=resolve.FUZZY_THRESHOLD)
    rows = await entity_rows.find_by_name(
        session, tenant_id=tenant_id, name=name, entity_type=request.entity_type, cap=CANDIDATE_CAP
    )
    candidates = [
        Candidate(
            row.id,
            row.canonical_name,
            row.entity_type,
            list(row.aliases),
            resolve.TIER_MATCH[row.tier],
        )
        for row in rows
    ]
    if request.enable_fuzzy and len(name) >= resolve.FUZZY_MIN_CHARS and trigram:
        fuzzy = await entity_rows.find_fuzzy(
            session,
            tenant_id=tenant_id,
            name=name,
            entity_type=request.entity_type,
            exclude=[c.entity_id for c in candidates],
            threshold=resolve.FUZZY_THRESHOLD,
            cap=CANDIDATE_CAP,
        )
        candidates += [
            Candidate(row.id, row.canonical_name, row.entity_type, list(row.aliases), "fuzzy")
            for row in fuzzy
        ]
    if candidates and request.context_hints is not None:
        hints = request.context_hints
        terms = resolve.hint_terms(hints.topic, hints.mentioned_with)
        fact_terms: dict[uuid.UUID, set[str]] = defaultdict(set)
        if terms:
            for fact in await entity_rows.fact_texts(
                session,
                tenant_id=tenant_id,
                entity_ids=[c.entity_id for c in candidates],
                per_entity=resolve.FACTS_PER_CANDIDATE,
            ):
                fact_terms[fact.entity_id] |= resolve.tokenize(f"{fact.predicate} {fact.content}")
        resolve.apply_boosts(
            candidates, fact_terms=fact_terms, hints=terms, domain_scores=hints.domain_scores
        )
    return resolve.rank(candidates, request.limit)


async def list_entities(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: EntityListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[Entity], str | None]:
    """A page of the tenant's entities, newest first; merged ones only on request."""
    filters = EntityFilters(
        entity_type=query.entity_type,
        name=query.name,
        include_merged=query.include_merged,
        memory_filter=memory_filter,
    )
    return await entity_rows.list_entities(
        session, tenant_id=tenant_id, filters=filters, limit=query.limit, cursor=query.cursor
    )


async def list_entity_facts(
    session: AsyncSession,
    *,
    tenant_id: str,
    entity_id: uuid.UUID,
    validity: str | None,
    limit: int,
    cursor: str | None,
    at: PointInTime | None = None,
) -> FactListing:
    """A page of the facts anchored to the entity, newest first (at a point in time, with
    `at`); NotFound when it is absent."""
    await get_entity(session, tenant_id=tenant_id, entity_id=entity_id)
    filters = FactFilters(
        entity_id=entity_id,
        validity=validity_for(validity, at),
        as_of=None if at is None else at.as_of,
        known_at=None if at is None else at.known_at,
    )
    return await listing(
        session, tenant_id=tenant_id, filters=filters, at=at, limit=limit, cursor=cursor
    )
