"""Merging one entity into another: facts, aliases, metadata, tombstone and audit event."""

import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import Conflict, InvalidInput, found
from app.models import Entity, Fact
from app.repositories import entities as entity_rows
from app.repositories import links as link_rows
from app.services import butler_limits, events


@dataclass
class MergeResult:
    target: Entity
    source_entity_id: uuid.UUID
    target_entity_id: uuid.UUID
    facts_repointed: int
    facts_superseded: int
    aliases_added: list[str]


def merge_aliases(
    *, target_name: str, target_aliases: list[str], source_name: str, source_aliases: list[str]
) -> tuple[list[str], list[str]]:
    """Target aliases followed by the source's name and aliases not yet known (ignoring case).

    Returns (merged aliases, added aliases); a name equal to the target's name is not added.
    """
    seen = {target_name.lower(), *(alias.lower() for alias in target_aliases)}
    added: list[str] = []
    for alias in [source_name, *source_aliases]:
        if alias.lower() not in seen:
            seen.add(alias.lower())
            added.append(alias)
    return [*target_aliases, *added], added


def entity_aliases(target: Entity, source: Entity) -> tuple[list[str], list[str]]:
    """`merge_aliases` of the two entities' names and aliases."""
    return merge_aliases(
        target_name=target.canonical_name,
        target_aliases=list(target.aliases),
        source_name=source.canonical_name,
        source_aliases=list(source.aliases),
    )


def check_mergeable(target_id: uuid.UUID, source_id: uuid.UUID) -> None:
    """A merge needs an unlimited key and two different entities."""
    butler_limits.check_unlimited("merging entities")
    if source_id == target_id:
        raise InvalidInput("an entity cannot be merged into itself", field="source_id")


def _winner_and_loser(source_fact: Fact, target_fact: Fact) -> tuple[Fact, Fact]:
    """The source fact wins only with strictly higher confidence."""
    if source_fact.confidence > target_fact.confidence:
        return source_fact, target_fact
    return target_fact, source_fact


async def merge_entities(
    session: AsyncSession, *, tenant_id: str, target_id: uuid.UUID, source_id: uuid.UUID
) -> MergeResult:
    """Fold the source entity into the target in the caller's transaction (it moves facts
    of every butler: Forbidden for a key limited to butlers).

    Both rows are locked FOR UPDATE in id order. Active facts conflicting on (scope, predicate)
    keep the higher confidence (the target wins ties); the loser becomes superseded, the winner's
    supersedes_id points at it and a `supersedes` link joins them. Then every source fact is
    anchored to the target, aliases and metadata are merged (target wins), the source is
    tombstoned and an `entity_merge` event is written.
    """
    check_mergeable(target_id, source_id)
    target, source = await _lock_pair(
        session, tenant_id=tenant_id, target_id=target_id, source_id=source_id
    )
    facts_repointed, facts_superseded = await _move_facts(
        session, tenant_id=tenant_id, target_id=target_id, source_id=source_id
    )

    aliases, added = entity_aliases(target, source)
    merged_target = await entity_rows.update_entity(
        session,
        tenant_id=tenant_id,
        entity_id=target_id,
        values={"aliases": aliases, "metadata_": {**source.metadata_, **target.metadata_}},
    )
    await entity_rows.update_entity(
        session, tenant_id=tenant_id, entity_id=source_id, values={"merged_into_id": target_id}
    )

    result = MergeResult(
        target=merged_target,
        source_entity_id=source_id,
        target_entity_id=target_id,
        facts_repointed=facts_repointed,
        facts_superseded=facts_superseded,
        aliases_added=added,
    )
    await _record_merge(session, tenant_id=tenant_id, result=result)
    return result


async def _lock_pair(
    session: AsyncSession, *, tenant_id: str, target_id: uuid.UUID, source_id: uuid.UUID
) -> tuple[Entity, Entity]:
    """The target and the source, locked FOR UPDATE; NotFound or Conflict when either is
    missing or already merged."""
    locked = await entity_rows.lock_pair(session, tenant_id=tenant_id, ids=(target_id, source_id))
    target, source = locked.get(target_id), locked.get(source_id)
    target = found(target, f"entity {target_id} not found")
    source = found(source, f"entity {source_id} not found")
    if source.merged_into_id is not None:
        raise Conflict(f"entity {source_id} was already merged into {source.merged_into_id}")
    if target.merged_into_id is not None:
        raise Conflict(
            f"entity {target_id} was merged into {target.merged_into_id}; "
            "merge into that entity instead"
        )
    return target, source


async def fact_contests(
    session: AsyncSession, *, tenant_id: str, target_id: uuid.UUID, source_id: uuid.UUID
) -> tuple[list[Fact], list[tuple[Fact, Fact]]]:
    """The source's active facts, and (winner, loser) for each that shares its scope and
    predicate with an active fact of the target."""
    moving = await entity_rows.active_facts(session, tenant_id=tenant_id, entity_id=source_id)
    held = {
        (fact.scope, fact.predicate_key): fact
        for fact in await entity_rows.active_facts(
            session, tenant_id=tenant_id, entity_id=target_id
        )
    }
    contests = [
        _winner_and_loser(fact, held[(fact.scope, fact.predicate_key)])
        for fact in moving
        if (fact.scope, fact.predicate_key) in held
    ]
    return moving, contests


async def _move_facts(
    session: AsyncSession, *, tenant_id: str, target_id: uuid.UUID, source_id: uuid.UUID
) -> tuple[int, int]:
    """Anchor the source's facts to the target, the loser of each conflict superseded; the
    counts of facts repointed and superseded."""
    _, contests = await fact_contests(
        session, tenant_id=tenant_id, target_id=target_id, source_id=source_id
    )
    # Losers leave the active set before any fact moves, so the partial unique index on
    # (tenant, entity, scope, predicate) WHERE active never sees two active rows.
    await entity_rows.supersede_facts(
        session, tenant_id=tenant_id, fact_ids=[loser.id for _, loser in contests]
    )
    facts_repointed = await entity_rows.repoint_facts(
        session, tenant_id=tenant_id, source_id=source_id, target_id=target_id
    )
    for winner, loser in contests:
        await entity_rows.set_supersedes(
            session, tenant_id=tenant_id, winner_id=winner.id, loser_id=loser.id
        )
        await link_rows.link_supersedes(
            session, tenant_id=tenant_id, newer=winner.id, older=loser.id
        )
    return facts_repointed, len(contests)


async def _record_merge(session: AsyncSession, *, tenant_id: str, result: MergeResult) -> None:
    """Write the `entity_merge` event."""
    await events.record(
        session,
        [
            events.Event(
                "entity_merge",
                tenant_id,
                {
                    "source_entity_id": str(result.source_entity_id),
                    "target_entity_id": str(result.target_entity_id),
                    "facts_repointed": result.facts_repointed,
                    "facts_superseded": result.facts_superseded,
                    "aliases_added": result.aliases_added,
                },
            )
        ],
    )
