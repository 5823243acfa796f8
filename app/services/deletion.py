"""Hard delete of one memory or one entity, in the request's transaction.

What goes is what `repositories/erasure` removes for the type (links, keyword postings, rule
applications, the memory's own events); what stays is one content-free tombstone event
(`<type>_deleted`: ids and time; the actor names the key).
"""

import uuid
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, NotFound
from app.embedding import Embedder
from app.models import Episode, Fact
from app.repositories import entities as entity_rows
from app.repositories import erasure as erasure_rows
from app.repositories.erasure import Counts
from app.services import butler_limits, episodes, events
from app.services.embeddings import replace_context_passages
from app.services.events import Memory, type_name
from app.services.memories import load_for_update

FactsOfEntity = Literal["detach", "delete"]


async def delete_memory(
    session: AsyncSession,
    model: type[Memory],
    *,
    tenant_id: str,
    memory_id: uuid.UUID,
    context_turns: int = 0,
    keyword_context: bool = False,
) -> Counts:
    """Delete an episode, a rule, or a fact with every version of its history; NotFound
    when the tenant has no such memory. (An episode's next `context_turns` turns get their
    keyword text again, with `keyword_context` or without.)"""
    await load_for_update(session, model, tenant_id=tenant_id, memory_id=memory_id)
    ids = [memory_id]
    if model is Fact:
        ids = await erasure_rows.fact_versions(session, tenant_id=tenant_id, ids=ids)
        counts = await erasure_rows.delete_facts(session, tenant_id=tenant_id, ids=ids)
    elif model is Episode:
        counts = await episodes.delete_episodes(
            session,
            tenant_id=tenant_id,
            ids=ids,
            context_turns=context_turns,
            keyword_context=keyword_context,
        )
    else:
        counts = await erasure_rows.delete_rules(session, tenant_id=tenant_id, ids=ids)
    name = type_name(model)
    await events.record(
        session,
        [
            events.Event(
                f"{name}_deleted",
                tenant_id,
                {
                    "memory_type": name,
                    "memory_id": str(memory_id),
                    "deleted_ids": [str(i) for i in ids],
                },
            )
        ],
    )
    return counts


async def delete_episode(
    session: AsyncSession,
    *,
    tenant_id: str,
    episode_id: uuid.UUID,
    embedder: Embedder,
    keyword_context: bool,
) -> Counts:
    """Delete an episode (`delete_memory`); the turns after it get their context passages
    made again without it, embedded before this session's first statement."""
    renewed = await episodes.renew_contexts(
        session, embedder, tenant_id=tenant_id, ids=[episode_id]
    )
    counts = await delete_memory(
        session,
        Episode,
        tenant_id=tenant_id,
        memory_id=episode_id,
        context_turns=embedder.context_turns,
        keyword_context=keyword_context,
    )
    await replace_context_passages(
        session, embedder, tenant_id=tenant_id, passages=renewed.passages, made=renewed.made
    )
    return counts


async def delete_entity(
    session: AsyncSession, *, tenant_id: str, entity_id: uuid.UUID, facts: FactsOfEntity
) -> Counts:
    """Delete an entity and the entities merged into it; their facts are detached (anchored
    to no entity) or deleted with their histories. NotFound when the tenant has no such
    entity; Conflict when detaching would give two active unanchored facts the same key.
    Its facts may be any butler's: Forbidden for a key limited to butlers."""
    butler_limits.check_unlimited("deleting an entity")
    if (
        await entity_rows.get(session, tenant_id=tenant_id, entity_id=entity_id, for_update=True)
        is None
    ):
        raise NotFound(f"entity {entity_id} not found")
    family = await erasure_rows.entity_family(session, tenant_id=tenant_id, ids=[entity_id])
    counts: Counts = {}
    if facts == "delete":
        anchored = await erasure_rows.facts_of_entities(
            session, tenant_id=tenant_id, entity_ids=family
        )
        versions = await erasure_rows.fact_versions(session, tenant_id=tenant_id, ids=anchored)
        counts = await erasure_rows.delete_facts(session, tenant_id=tenant_id, ids=versions)
    else:
        clashes = await erasure_rows.detach_collisions(
            session, tenant_id=tenant_id, entity_ids=family
        )
        if clashes:
            raise Conflict(
                f"{clashes} active fact(s) of the entity have the key (scope, "
                "subject, predicate) of an active fact anchored to no entity; "
                "detaching them would give one key two active facts. Use "
                "facts=delete, or retract one side first",
                field="facts",
            )
        counts["facts_detached"] = await erasure_rows.detach_facts(
            session, tenant_id=tenant_id, entity_ids=family
        )
    for table, count in (
        await erasure_rows.delete_entities(session, tenant_id=tenant_id, ids=family)
    ).items():
        counts[table] = counts.get(table, 0) + count
    await events.record(
        session,
        [
            events.Event(
                "entity_deleted",
                tenant_id,
                {
                    "entity_id": str(entity_id),
                    "deleted_ids": [str(i) for i in family],
                    "facts": facts,
                },
            )
        ],
    )
    return counts
