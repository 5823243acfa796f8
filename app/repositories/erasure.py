"""Hard deletion: one function per memory type and one for entities.

Each removes the rows and everything that holds their content or points at them, in the
caller's transaction, and returns counts per table:
- memory_links touching them (both ends; the mem_005 delete trigger would do it too, it is
  done here first so that it can be counted);
- keyword_postings and the keyword statistics: kept by the mem_010 and mem_021 delete triggers
  (postings are counted before);
- rule_applications (reason and context): deleted before their rules;
- memory_events: the events of the memory (payload memory_id) and those naming it at an end
  of a link (link_created, link_deleted, what a link did to a fact) are deleted; an episode's id
  leaves the episode_ids lists of consolidation events, which also lose their error text;
- the arcs' key events, the procedures' learned_from entries and the working memories'
  retrieved ids naming the memory (and the arcs' entity_ids naming a deleted entity).
Facts that name a deleted episode as their source keep living (source_episode_id becomes
NULL by its foreign key, their `origins` stay); a deleted fact's successor loses its
supersedes_id the same way.
"""

import uuid
from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

Counts = dict[str, int]

# The memory_events types that record a deletion; a tenant's erasure keeps them.
TOMBSTONE_EVENTS = (
    "episode_deleted",
    "fact_deleted",
    "rule_deleted",
    "entity_deleted",
    "run_deleted",
    "runs_deleted",
    "memories_erased",
    "erasure_completed",
)
CONSOLIDATION_EVENTS = ("episodes_consolidated", "episodes_consolidation_failed")
# The ends of a link an event names (link_created, link_deleted, and what a link did to a
# fact): the expression and condition of ix_memory_events_link_ends (mem_033).
LINK_ENDS = "ARRAY[payload ->> 'source_id', payload ->> 'target_id', payload ->> 'link_source_id']"
LINK_KEYS = "payload ?| ARRAY['source_id', 'target_id', 'link_source_id']"


def _texts(ids: Sequence[uuid.UUID]) -> list[str]:
    return [str(i) for i in ids]


async def _ids_of(
    session: AsyncSession, statement: str, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """The first column of `statement`'s rows, run with `:tenant_id` and `:ids`; none for
    no ids."""
    if not ids:
        return []
    rows = await session.execute(text(statement), {"tenant_id": tenant_id, "ids": _texts(ids)})
    return [row[0] for row in rows]


async def _rowcount(session: AsyncSession, statement: str, **params: object) -> int:
    result = await session.execute(text(statement), params)
    return int(result.rowcount)  # type: ignore[attr-defined]


async def _delete_rows(
    session: AsyncSession, table: str, *, tenant_id: str, ids: Sequence[uuid.UUID], key: str = "id"
) -> int:
    """Delete the tenant's rows of `table` whose `key` is one of `ids`; how many went."""
    return await _rowcount(
        session,
        f'DELETE FROM "{table}" WHERE tenant_id = :tenant_id AND {key} = ANY(CAST(:ids AS uuid[]))',
        tenant_id=tenant_id,
        ids=_texts(ids),
    )


async def _drop_references(
    session: AsyncSession, *, tenant_id: str, memory_type: str, ids: Sequence[uuid.UUID]
) -> int:
    """Take these memories out of the arcs' key events, the procedures' learned_from lists
    and the working memories' retrieved ids that name them; how many rows changed."""
    params = {"tenant_id": tenant_id, "memory_type": memory_type, "ids": _texts(ids)}
    changed = 0
    for table, column in (("arcs", "key_events"), ("procedures", "learned_from")):
        changed += await _rowcount(
            session,
            f"""
            UPDATE {table} SET {column} = (
                SELECT coalesce(jsonb_agg(item ORDER BY ordinal), '[]'::jsonb)
                FROM jsonb_array_elements({column}) WITH ORDINALITY AS x(item, ordinal)
                WHERE NOT (item ->> 'memory_type' = :memory_type
                           AND item ->> 'memory_id' = ANY(CAST(:ids AS text[]))))
            WHERE tenant_id = :tenant_id AND EXISTS (
                SELECT 1 FROM jsonb_array_elements({column}) AS item
                WHERE item ->> 'memory_type' = :memory_type
                  AND item ->> 'memory_id' = ANY(CAST(:ids AS text[])))""",
            **params,
        )
    changed += await _rowcount(
        session,
        """
        UPDATE working_memories SET revision = :revision, retrieved_memory_ids = ARRAY(
            SELECT kept FROM unnest(retrieved_memory_ids) WITH ORDINALITY AS x(kept, ordinal)
            WHERE kept <> ALL(CAST(:ids AS uuid[])) ORDER BY ordinal)
        WHERE tenant_id = :tenant_id
          AND retrieved_memory_ids && CAST(:ids AS uuid[])""",
        tenant_id=tenant_id,
        ids=_texts(ids),
        # Bound, not gen_random_uuid(): a distributed table's UPDATE takes no volatile function.
        revision=uuid.uuid4(),
    )
    return changed


async def _remove_trace(
    session: AsyncSession, *, tenant_id: str, memory_type: str, ids: Sequence[uuid.UUID]
) -> Counts:
    """Delete the links and events of these memories and the references arcs, procedures
    and working memories hold to them; count their keyword postings."""
    id_texts = _texts(ids)
    references = await _drop_references(
        session, tenant_id=tenant_id, memory_type=memory_type, ids=ids
    )
    links = await _rowcount(
        session,
        """
        DELETE FROM memory_links
        WHERE tenant_id = :tenant_id
          AND ((source_type = :memory_type AND source_id = ANY(CAST(:ids AS uuid[])))
               OR (target_type = :memory_type AND target_id = ANY(CAST(:ids AS uuid[]))))""",
        tenant_id=tenant_id,
        memory_type=memory_type,
        ids=id_texts,
    )
    postings = (
        await session.execute(
            text(
                "SELECT count(*) FROM keyword_postings WHERE tenant_id = :tenant_id "
                "AND memory_type = :memory_type AND memory_id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"tenant_id": tenant_id, "memory_type": memory_type, "ids": id_texts},
        )
    ).scalar_one()
    events = await _rowcount(
        session,
        f"""
        DELETE FROM memory_events
        WHERE tenant_id = :tenant_id
          AND (payload ->> 'memory_id' = ANY(CAST(:ids AS text[]))
               OR ({LINK_KEYS} AND {LINK_ENDS} && CAST(:ids AS text[])))""",
        tenant_id=tenant_id,
        ids=id_texts,
    )
    return {
        "memory_links": links,
        "keyword_postings": int(postings),
        "memory_events_deleted": events,
        "references_dropped": references,
    }


async def _scrub_episode_lists(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> int:
    """Take the episodes out of the consolidation events that list them (and drop those
    events' error text, which may quote them); how many events changed."""
    return await _rowcount(
        session,
        """
        UPDATE memory_events
        SET payload = (payload - 'error')
            || jsonb_build_object('episode_ids',
                                  (payload -> 'episode_ids') - CAST(:ids AS text[]))
        WHERE tenant_id = :tenant_id AND event_type = ANY(CAST(:types AS text[]))
          AND jsonb_typeof(payload -> 'episode_ids') = 'array'
          AND (payload -> 'episode_ids') ?| CAST(:ids AS text[])""",
        tenant_id=tenant_id,
        ids=_texts(ids),
        types=list(CONSOLIDATION_EVENTS),
    )


async def delete_episodes(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> Counts:
    """Hard-delete the tenant's episodes with these ids and their trace."""
    if not ids:
        return {}
    counts = await _remove_trace(session, tenant_id=tenant_id, memory_type="episode", ids=ids)
    counts["memory_events_scrubbed"] = await _scrub_episode_lists(
        session, tenant_id=tenant_id, ids=ids
    )
    counts["episodes"] = await _delete_rows(session, "episodes", tenant_id=tenant_id, ids=ids)
    return counts


async def _forget_runs(session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]) -> None:
    """Take the runs' ids out of the origins of what was learned from them; their task
    stays, so an erasure of the task still finds it."""
    gone = [f"run:{i}" for i in ids]
    for table in ("facts", "rules", "procedures"):
        await session.execute(
            text(f"""
            UPDATE {table} SET origins = ARRAY(
                SELECT o FROM unnest(origins) AS o WHERE o <> ALL(CAST(:gone AS text[])))
            WHERE tenant_id = :tenant_id AND origins <> '{{}}'
              AND origins && CAST(:gone AS text[])"""),
            {"tenant_id": tenant_id, "gone": gone},
        )


async def delete_runs(session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]) -> Counts:
    """Hard-delete the tenant's runs with these ids, their messages and feedback (by their
    foreign keys), the links touching any of them, the events naming them (at an end of a
    link too) and their ids in the origins of what was learned from them."""
    if not ids:
        return {}
    id_texts = _texts(ids)
    params = {"tenant_id": tenant_id, "ids": id_texts}
    parts = """
        SELECT 'run' AS kind, id FROM runs
        WHERE tenant_id = :tenant_id AND id = ANY(CAST(:ids AS uuid[]))
        UNION ALL
        SELECT 'run_message', id FROM run_messages
        WHERE tenant_id = :tenant_id AND run_id = ANY(CAST(:ids AS uuid[]))
        UNION ALL
        SELECT 'run_feedback', id FROM run_feedback
        WHERE tenant_id = :tenant_id AND run_id = ANY(CAST(:ids AS uuid[]))"""
    links = await _rowcount(
        session,
        f"""
        WITH parts AS ({parts})
        DELETE FROM memory_links l USING parts p
        WHERE l.tenant_id = :tenant_id
          AND ((l.source_type = p.kind AND l.source_id = p.id)
               OR (l.target_type = p.kind AND l.target_id = p.id))""",
        **params,
    )
    events = await _rowcount(
        session,
        f"""
        WITH parts AS ({parts})
        DELETE FROM memory_events
        WHERE tenant_id = :tenant_id
          AND (payload ->> 'run_id' = ANY(CAST(:ids AS text[]))
               OR ({LINK_KEYS}
                   AND {LINK_ENDS} && ARRAY(SELECT CAST(id AS text) FROM parts)))""",
        **params,
    )
    await _forget_runs(session, tenant_id=tenant_id, ids=ids)
    messages = await _delete_rows(
        session, "run_messages", tenant_id=tenant_id, ids=ids, key="run_id"
    )
    feedback = await _delete_rows(
        session, "run_feedback", tenant_id=tenant_id, ids=ids, key="run_id"
    )
    runs = await _delete_rows(session, "runs", tenant_id=tenant_id, ids=ids)
    return {
        "runs": runs,
        "run_messages": messages,
        "run_feedback": feedback,
        "memory_links": links,
        "memory_events_deleted": events,
    }


async def _version_chain(
    session: AsyncSession, *, table: str, link: str, tenant_id: str, ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """Every row of `table` in the version chains of `ids`, followed both ways along `link`
    (the column naming the version a row replaces or is replaced by), transitively."""
    return await _ids_of(
        session,
        f"""
        WITH RECURSIVE chain(id) AS (
            SELECT id FROM {table}
            WHERE tenant_id = :tenant_id AND id = ANY(CAST(:ids AS uuid[]))
          UNION
            SELECT CASE WHEN v.id = c.id THEN v.{link} ELSE v.id END
            FROM chain c JOIN {table} v ON v.id = c.id OR v.{link} = c.id
            WHERE v.tenant_id = :tenant_id AND v.{link} IS NOT NULL
        )
        SELECT id FROM chain""",
        tenant_id=tenant_id,
        ids=ids,
    )


async def fact_versions(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """Every version in the supersession chains of these facts: what they superseded and
    what superseded them, transitively."""
    return await _version_chain(
        session, table="facts", link="supersedes_id", tenant_id=tenant_id, ids=ids
    )


async def delete_facts(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> Counts:
    """Hard-delete the tenant's facts with these ids (exactly these: expand them with
    `fact_versions` first to take whole histories) and their trace."""
    if not ids:
        return {}
    counts = await _remove_trace(session, tenant_id=tenant_id, memory_type="fact", ids=ids)
    counts["facts"] = await _delete_rows(session, "facts", tenant_id=tenant_id, ids=ids)
    return counts


async def delete_rules(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> Counts:
    """Hard-delete the tenant's rules with these ids, their applications and their trace."""
    if not ids:
        return {}
    counts = await _remove_trace(session, tenant_id=tenant_id, memory_type="rule", ids=ids)
    counts["rule_applications"] = await _delete_rows(
        session, "rule_applications", tenant_id=tenant_id, ids=ids, key="rule_id"
    )
    counts["rules"] = await _delete_rows(session, "rules", tenant_id=tenant_id, ids=ids)
    return counts


async def entity_family(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """These entities and the tombstones merged into them, transitively (one identity)."""
    return await _ids_of(
        session,
        """
        WITH RECURSIVE family(id) AS (
            SELECT id FROM entities
            WHERE tenant_id = :tenant_id AND id = ANY(CAST(:ids AS uuid[]))
          UNION
            SELECT e.id FROM entities e JOIN family f ON e.merged_into_id = f.id
            WHERE e.tenant_id = :tenant_id
        )
        SELECT id FROM family""",
        tenant_id=tenant_id,
        ids=ids,
    )


async def facts_of_entities(
    session: AsyncSession, *, tenant_id: str, entity_ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """The ids of every fact (any validity) anchored to these entities."""
    rows = await session.execute(
        text(
            "SELECT id FROM facts WHERE tenant_id = :tenant_id "
            "AND entity_id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"tenant_id": tenant_id, "ids": _texts(entity_ids)},
    )
    return [row[0] for row in rows]


async def detach_facts(
    session: AsyncSession, *, tenant_id: str, entity_ids: Sequence[uuid.UUID]
) -> int:
    """Anchor the facts of these entities to no entity; how many."""
    return await _rowcount(
        session,
        "UPDATE facts SET entity_id = NULL "
        "WHERE tenant_id = :tenant_id "
        "AND entity_id = ANY(CAST(:ids AS uuid[]))",
        tenant_id=tenant_id,
        ids=_texts(entity_ids),
    )


async def detach_collisions(
    session: AsyncSession, *, tenant_id: str, entity_ids: Sequence[uuid.UUID]
) -> int:
    """Active facts of these entities whose (scope, subject, predicate) an active unanchored
    fact already holds: detaching them would break that key's uniqueness."""
    return int(
        (
            await session.execute(
                text("""
        SELECT count(*) FROM facts f
        WHERE f.tenant_id = :tenant_id AND f.entity_id = ANY(CAST(:ids AS uuid[]))
          AND f.validity = 'active'
          AND EXISTS (SELECT 1 FROM facts o
                      WHERE o.tenant_id = f.tenant_id AND o.entity_id IS NULL
                        AND o.validity = 'active' AND o.scope = f.scope
                        AND o.subject_key = f.subject_key
                        AND o.predicate_key = f.predicate_key)"""),
                {"tenant_id": tenant_id, "ids": _texts(entity_ids)},
            )
        ).scalar_one()
    )


async def delete_entities(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> Counts:
    """Hard-delete the tenant's entities with these ids (their facts must be gone or
    detached first: the foreign key is RESTRICT), their merge events and the events naming
    them at an end of a link."""
    if not ids:
        return {}
    id_texts = _texts(ids)
    # merged_into_id is RESTRICT too: cut the tombstones loose within the set first.
    await session.execute(
        text(
            "UPDATE entities SET merged_into_id = NULL WHERE tenant_id = :tenant_id "
            "AND id = ANY(CAST(:ids AS uuid[])) AND merged_into_id IS NOT NULL"
        ),
        {"tenant_id": tenant_id, "ids": id_texts},
    )
    events = await _rowcount(
        session,
        f"""
        DELETE FROM memory_events
        WHERE tenant_id = :tenant_id
          AND (payload ->> 'entity_id' = ANY(CAST(:ids AS text[]))
               OR ({LINK_KEYS} AND {LINK_ENDS} && CAST(:ids AS text[]))
               OR (event_type = 'entity_merge'
                   AND (payload ->> 'source_entity_id' = ANY(CAST(:ids AS text[]))
                        OR payload ->> 'target_entity_id' = ANY(CAST(:ids AS text[])))))""",
        tenant_id=tenant_id,
        ids=id_texts,
    )
    references = await _rowcount(
        session,
        """
        UPDATE arcs SET entity_ids = ARRAY(
            SELECT kept FROM unnest(entity_ids) WITH ORDINALITY AS x(kept, ordinal)
            WHERE kept <> ALL(CAST(:ids AS uuid[])) ORDER BY ordinal)
        WHERE tenant_id = :tenant_id AND entity_ids && CAST(:ids AS uuid[])""",
        tenant_id=tenant_id,
        ids=id_texts,
    )
    entities = await _delete_rows(session, "entities", tenant_id=tenant_id, ids=ids)
    return {"entities": entities, "memory_events_deleted": events, "references_dropped": references}


async def delete_tenant_events(session: AsyncSession, *, tenant_id: str, limit: int) -> int:
    """Delete up to `limit` of the tenant's events that are not deletion tombstones."""
    return await _rowcount(
        session,
        """
        DELETE FROM memory_events WHERE id IN (
            SELECT id FROM memory_events
            WHERE tenant_id = :tenant_id AND event_type <> ALL(CAST(:kept AS text[]))
            LIMIT :limit)""",
        tenant_id=tenant_id,
        kept=list(TOMBSTONE_EVENTS),
        limit=limit,
    )


# A whole tenant's records beside its memories, children before their parents, with the
# memory type their tombstones name: task runs, the agent ledgers, procedures, arcs and
# working memories.
TENANT_RECORDS = {
    "run_feedback": "run_feedback",
    "run_messages": "run_message",
    "runs": "run",
    "reflection_consolidations": "reflection_consolidation",
    "agent_events": "agent_event",
    "procedures": "procedure",
    "arcs": "arc",
    "working_memories": "working_memory",
}
_KEYS = {"reflection_consolidations": "event_id"}


async def delete_tenant_records(
    session: AsyncSession, *, tenant_id: str, table: str, limit: int
) -> list[uuid.UUID]:
    """Delete up to `limit` of the tenant's rows of one of `TENANT_RECORDS`; their ids (the
    links of deleted runs, messages, feedback, events and procedures go by trigger)."""
    key = _KEYS.get(table, "id")
    rows = await session.execute(
        text(f"""
        DELETE FROM {table} WHERE tenant_id = :tenant_id AND {key} IN (
            SELECT {key} FROM {table} WHERE tenant_id = :tenant_id LIMIT :limit)
        RETURNING {key}"""),
        {"tenant_id": tenant_id, "limit": limit},
    )
    return [row[0] for row in rows]


async def procedure_versions(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """Every version of these procedures: the ones they superseded and the ones that
    superseded them, transitively."""
    return await _version_chain(
        session, table="procedures", link="superseded_by", tenant_id=tenant_id, ids=ids
    )


async def delete_procedures(
    session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> Counts:
    """Hard-delete the tenant's procedures with these ids, their events and the events naming
    them at an end of a link (their links go by trigger)."""
    if not ids:
        return {}
    events = await _rowcount(
        session,
        f"""
        DELETE FROM memory_events
        WHERE tenant_id = :tenant_id
          AND (payload ->> 'procedure_id' = ANY(CAST(:ids AS text[]))
               OR ({LINK_KEYS} AND {LINK_ENDS} && CAST(:ids AS text[])))""",
        tenant_id=tenant_id,
        ids=_texts(ids),
    )
    procedures = await _delete_rows(session, "procedures", tenant_id=tenant_id, ids=ids)
    return {"procedures": procedures, "memory_events_deleted": events}


TENANT_LEFTOVERS = (
    "memory_links",
    "rule_applications",
    "keyword_terms",
    "keyword_corpus",
    "keyword_scope_terms",
    "keyword_scope_corpus",
)


async def delete_tenant_leftovers(session: AsyncSession, *, tenant_id: str) -> Counts:
    """Once the tenant's memories are gone: its remaining links, rule applications and
    keyword statistics."""
    return {
        table: await _rowcount(
            session, f"DELETE FROM {table} WHERE tenant_id = :tenant_id", tenant_id=tenant_id
        )
        for table in TENANT_LEFTOVERS
    }
