"""Storing facts with supersession, and their history."""

import uuid

from sqlalchemy import ColumnElement, func
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding import Embedder
from app.errors import InvalidInput, NotFound
from app.models import Fact
from app.repositories import entities, facts, links, memories
from app.schemas.facts import FactCreate
from app.services.embeddings import embed_texts
from app.services.lifecycle import decay_rate_for
from app.services.memories import record_event
from app.text import preprocess_text


def fact_search_text(subject: str, predicate: str, content: str) -> str:
    """The text a fact's tsvector is built from."""
    return preprocess_text(f"{subject} {predicate} {content}")


async def store_fact(session: AsyncSession, *, tenant_id: str, embedder: Embedder,
                     data: FactCreate) -> Fact:
    """Store an active fact; an active fact with the same key becomes superseded, atomically.

    The key is (scope, subject, predicate) without an entity, (entity_id, scope, predicate)
    with one.
    """
    decay_rate = decay_rate_for(data.permanence)
    await _check_references(session, tenant_id=tenant_id, data=data)
    embedded = await embed_texts(session, embedder, [data.content])

    key = (f"fact:{tenant_id}:entity:{data.entity_id}:{data.scope}:{data.predicate}"
           if data.entity_id else
           f"fact:{tenant_id}:subject:{data.scope}:{data.subject}:{data.predicate}")
    await facts.lock_key(session, key)
    previous = await facts.find_active_by_key(
        session, tenant_id=tenant_id, scope=data.scope, subject=data.subject,
        predicate=data.predicate, entity_id=data.entity_id,
    )
    if previous is not None:
        await memories.update_row(session, Fact, memory_id=previous.id,
                                  values={"validity": "superseded"})

    [fact] = await memories.insert_rows(session, Fact, [{
        "tenant_id": tenant_id,
        "subject": data.subject,
        "predicate": data.predicate,
        "content": data.content,
        "importance": data.importance,
        "confidence": 1.0,
        "decay_rate": decay_rate,
        "permanence": data.permanence,
        "scope": data.scope,
        "tags": data.tags,
        "entity_id": data.entity_id,
        "source_butler": data.source_butler,
        "source_episode_id": data.source_episode_id,
        "supersedes_id": previous.id if previous else None,
        "metadata_": data.metadata,
        "embedding": embedded.vectors[0],
        "embedding_version_id": embedded.version_id,
        "search_text": fact_search_text(data.subject, data.predicate, data.content),
    }], last_confirmed_at=func.now())

    await record_event(session, "fact_created", tenant_id, fact)
    if previous is not None:
        await links.create_link(session, tenant_id=tenant_id, source_type="fact",
                                source_id=fact.id, target_type="fact", target_id=previous.id,
                                relation="supersedes")
        await record_event(session, "fact_superseded", tenant_id, previous,
                           superseded_by=str(fact.id))
    return fact


async def _check_references(session: AsyncSession, *, tenant_id: str, data: FactCreate) -> None:
    if data.entity_id is not None:
        entity = await entities.get(session, tenant_id=tenant_id, entity_id=data.entity_id,
                                    for_share=True)
        if entity is None:
            raise InvalidInput(f"entity {data.entity_id} does not exist", field="entity_id")
        if entity.metadata_.get("merged_into"):
            raise InvalidInput(
                f"entity {data.entity_id} was merged into {entity.metadata_['merged_into']}",
                field="entity_id",
            )
    if data.source_episode_id is not None and not await facts.episode_exists(
            session, tenant_id=tenant_id, episode_id=data.source_episode_id):
        raise InvalidInput(f"episode {data.source_episode_id} does not exist",
                           field="source_episode_id")


async def fact_history_chain(session: AsyncSession, *, tenant_id: str,
                             fact_id: uuid.UUID) -> list[Fact]:
    """Every version of the fact's key, newest first; NotFound when the fact is absent."""
    fact = await memories.get(session, Fact, tenant_id=tenant_id, memory_id=fact_id)
    if fact is None:
        raise NotFound(f"fact {fact_id} not found")
    return await facts.supersession_chain(session, tenant_id=tenant_id, fact=fact)


def fact_filters(*, subject: str | None, predicate: str | None, scope: str | None,
                 validity: str | None, entity_id: uuid.UUID | None) -> list[ColumnElement[bool]]:
    """WHERE clauses of the fact listing; scope matches that scope only."""
    filters: list[ColumnElement[bool]] = []
    if subject is not None:
        filters.append(Fact.subject == subject)
    if predicate is not None:
        filters.append(Fact.predicate == predicate)
    if scope is not None:
        filters.append(Fact.scope == scope)
    if validity is not None:
        filters.append(Fact.validity == validity)
    if entity_id is not None:
        filters.append(Fact.entity_id == entity_id)
    return filters
