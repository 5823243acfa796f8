"""Storing facts with supersession, and their history."""

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.config import AutoLinkSettings
from app.core.errors import InvalidInput, found
from app.core.text import normalise_key, preprocess_text
from app.embedding import Embedder
from app.formulas import fact_time
from app.formulas.fact_time import PointInTime, point_in_time
from app.formulas.lifecycle import decay_rate_for
from app.models import Fact
from app.repositories import entities as entity_rows
from app.repositories import episodes as episode_rows
from app.repositories import fact_time as time_rows
from app.repositories import facts as fact_rows
from app.repositories import memories as memory_rows
from app.repositories.facts import FactFilters
from app.schemas.facts import FactCreate, FactListQuery
from app.schemas.filters import MemoryFilter
from app.services import butler_limits, events, fact_timeline
from app.services.auto_links import link_stored
from app.services.embeddings import Embedded, embed_for_write
from app.services.events import memory_event


def fact_search_text(subject: str, predicate: str, content: str) -> str:
    """The text a fact's tsvector is built from."""
    return preprocess_text(f"{subject} {predicate} {content}")


@dataclass(frozen=True)
class StoredFact:
    """The active fact after a store, and whether it is a new row (False: an identical active
    fact was confirmed instead)."""

    fact: Fact
    created: bool


async def store_fact(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    data: FactCreate,
    auto_links: AutoLinkSettings | None = None,
) -> StoredFact:
    """Store a fact version; the key's versions are kept in valid-time order, atomically
    (`services/fact_timeline`): starting after the others it becomes the active one and the
    previous active one is superseded; starting earlier it is history.

    The key is (scope, subject, predicate) without an entity, (entity_id, scope, predicate)
    with one, subject and predicate compared as normalised keys (`normalise_key`). An active
    fact with the same key and the same content is confirmed instead (its decay restarts).
    A new fact is linked `related_to` its most similar facts and rules (`auto_links`) and
    `mentions` the entities its subject, predicate or content names (`services/mentions`).
    """
    butler_limits.check_butler(data.scope, "scope")
    check_period(data)
    # The model runs before the first SQL, so no connection is held while it works.
    embedded = await embed_for_write(session, embedder, [data.content], tenant_id=tenant_id)
    return await store_embedded_fact(
        session, tenant_id=tenant_id, data=data, embedded=embedded, auto_links=auto_links
    )


def lock_name(tenant_id: str, data: FactCreate) -> str:
    """The name of the lock that serialises writers of the fact's supersession key."""
    predicate_key = normalise_key(data.predicate)
    if data.entity_id:
        return f"fact:{tenant_id}:entity:{data.entity_id}:{data.scope}:{predicate_key}"
    return f"fact:{tenant_id}:subject:{data.scope}:{normalise_key(data.subject)}:{predicate_key}"


def check_period(data: FactCreate) -> None:
    """InvalidInput unless the fact's valid period ends after it starts."""
    if data.valid_until is not None and data.valid_until <= (data.valid_from or now_utc()):
        raise InvalidInput(
            "valid_until must be after valid_from (default: now)", field="valid_until"
        )


async def store_embedded_fact(
    session: AsyncSession,
    *,
    tenant_id: str,
    data: FactCreate,
    embedded: Embedded,
    auto_links: AutoLinkSettings | None = None,
) -> StoredFact:
    """`store_fact` with the content already embedded (`embedded` holds this one text)."""
    subject_key, predicate_key = normalise_key(data.subject), normalise_key(data.predicate)
    await _check_references(session, tenant_id=tenant_id, data=data)

    await fact_rows.lock_key(session, lock_name(tenant_id, data))
    versions = await time_rows.believed_versions(
        session,
        tenant_id=tenant_id,
        scope=data.scope,
        subject_key=subject_key,
        predicate_key=predicate_key,
        entity_id=data.entity_id,
    )
    current = next((v for v in versions if v.validity == "active"), None)
    # Taken under the key's lock, so a version stored later never starts before one stored
    # earlier, whichever transaction began first.
    starts = data.valid_from or now_utc()
    if current is not None and current.content == data.content and starts >= current.valid_from:
        return await _confirm_again(session, tenant_id=tenant_id, current=current)
    placement = fact_time.place(versions, starts)
    is_current = placement.following is None
    superseded = current if is_current else None
    if superseded is not None:
        # Out of the active set before the insert (one active fact per key).
        await memory_rows.update_row(
            session,
            Fact,
            tenant_id=tenant_id,
            memory_id=superseded.id,
            values={"validity": "superseded"},
        )

    row = _fact_row(
        tenant_id,
        data,
        subject_key=subject_key,
        predicate_key=predicate_key,
        embedded=embedded,
        placement=placement,
        is_current=is_current,
    )
    fact = await fact_rows.insert_fact(session, row, valid_from=starts)
    await time_rows.open_period(session, fact)
    await link_stored(
        session,
        "fact",
        fact,
        f"{fact.subject} {fact.predicate} {fact.content}",
        tenant_id=tenant_id,
        embedded=embedded,
        settings=auto_links,
    )

    happened = [memory_event("fact_created", tenant_id, fact)]
    happened += await fact_timeline.apply(
        session, tenant_id=tenant_id, fact=fact, placement=placement, superseded=superseded
    )
    await events.record(session, happened)
    return StoredFact(fact, created=True)


async def _confirm_again(session: AsyncSession, *, tenant_id: str, current: Fact) -> StoredFact:
    """The active fact confirmed instead of storing an identical one again."""
    confirmed = await memory_rows.confirm_row(
        session, Fact, tenant_id=tenant_id, memory_id=current.id
    )
    await events.record(
        session,
        [
            memory_event(
                "fact_confirmed", tenant_id, confirmed, reason="identical fact stored again"
            )
        ],
    )
    return StoredFact(confirmed, created=False)


def _fact_row(
    tenant_id: str,
    data: FactCreate,
    *,
    subject_key: str,
    predicate_key: str,
    embedded: Embedded,
    placement: fact_time.Placement[Fact],
    is_current: bool,
) -> dict[str, Any]:
    """The columns of a new fact version."""
    return {
        "tenant_id": tenant_id,
        "subject": data.subject,
        "predicate": data.predicate,
        "subject_key": subject_key,
        "predicate_key": predicate_key,
        "content": data.content,
        "importance": data.importance,
        "confidence": 1.0,
        "decay_rate": decay_rate_for(data.permanence),
        "permanence": data.permanence,
        "scope": data.scope,
        "tags": data.tags,
        "entity_id": data.entity_id,
        "source_butler": data.source_butler,
        "source_episode_id": data.source_episode_id,
        "supersedes_id": placement.predecessor.id if placement.predecessor else None,
        "validity": "active" if is_current else "superseded",
        "valid_until": fact_time.bounded_until(data.valid_until, placement),
        "metadata_": data.metadata,
        **embedded.columns(0),
        "search_text": fact_search_text(data.subject, data.predicate, data.content),
        "language": data.language,
    }


async def _check_references(session: AsyncSession, *, tenant_id: str, data: FactCreate) -> None:
    if data.entity_id is not None:
        entity = await entity_rows.get(
            session, tenant_id=tenant_id, entity_id=data.entity_id, for_share=True
        )
        if entity is None:
            raise InvalidInput(f"entity {data.entity_id} does not exist", field="entity_id")
        if entity.merged_into_id is not None:
            raise InvalidInput(
                f"entity {data.entity_id} was merged into {entity.merged_into_id}",
                field="entity_id",
            )
    if data.source_episode_id is not None and not await episode_rows.episode_exists(
        session, tenant_id=tenant_id, episode_id=data.source_episode_id
    ):
        raise InvalidInput(
            f"episode {data.source_episode_id} does not exist", field="source_episode_id"
        )


async def fact_history_chain(
    session: AsyncSession, *, tenant_id: str, fact_id: uuid.UUID
) -> list[Fact]:
    """Every version of the fact's key, newest first; NotFound when the fact is absent."""
    fact = await memory_rows.get(session, Fact, tenant_id=tenant_id, memory_id=fact_id)
    fact = found(fact, f"fact {fact_id} not found")
    return await fact_rows.supersession_chain(session, tenant_id=tenant_id, fact=fact)


@dataclass(frozen=True)
class FactListing:
    """A page of facts read at `at` (None: today), with the valid period each was believed
    to have at `at.known_at` when that differs from today's."""

    rows: list[Fact]
    next_cursor: str | None
    at: PointInTime | None = None
    periods: fact_time.Periods = field(default_factory=dict)


async def list_facts(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: FactListQuery,
    memory_filter: MemoryFilter | None = None,
) -> FactListing:
    """A page of the tenant's facts, newest first; None filters match anything, except
    `validity`, which is `active` unless the read is at a point in time (`as_of`,
    `known_at`)."""
    at = point_in_time(query.as_of, query.known_at)
    subject, predicate = query.subject, query.predicate
    filters = FactFilters(
        subject_key=None if subject is None else normalise_key(subject),
        predicate_key=None if predicate is None else normalise_key(predicate),
        scope=query.scope,
        validity=validity_for(query.validity, at),
        entity_id=query.entity_id,
        as_of=None if at is None else at.as_of,
        known_at=None if at is None else at.known_at,
        memory_filter=memory_filter,
    )
    return await listing(
        session, tenant_id=tenant_id, filters=filters, at=at, limit=query.limit, cursor=query.cursor
    )


async def listing(
    session: AsyncSession,
    *,
    tenant_id: str,
    filters: FactFilters,
    at: PointInTime | None,
    limit: int,
    cursor: str | None,
) -> FactListing:
    """A page of the facts `filters` keep, with their periods as believed at `at`."""
    rows, next_cursor = await fact_rows.list_facts(
        session, tenant_id=tenant_id, filters=filters, limit=limit, cursor=cursor
    )
    periods = await time_rows.periods_at(session, tenant_id=tenant_id, facts=rows, at=at)
    return FactListing(rows, next_cursor, at, periods)


def validity_for(validity: str | None, at: PointInTime | None) -> str | None:
    """The validity a listing keeps: as asked; by default `active`, or any at a point in time
    (where valid and record time decide)."""
    return validity if validity is not None or at is not None else "active"
