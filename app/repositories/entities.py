"""entities: the identity registry, its search for resolve and the row work of a merge."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, func, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.scope import SET_LOCAL_KEY, set_local, transaction_now
from app.models import Entity, Fact
from app.repositories import pagination
from app.repositories.fact_time import record_end
from app.repositories.filters import equal
from app.repositories.memory_filters import compile_filter
from app.repositories.rows import update_stamped
from app.schemas.filters import MemoryFilter

LIKE_ESCAPE = "\\"


def escape_like(value: str) -> str:
    """`value` with LIKE's wildcards (`%`, `_`) and the escape character taken literally."""
    return (
        value.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


def contains_trigrams(column: ColumnElement[str], value: str) -> ColumnElement[bool]:
    """Holds for every text of `column` that contains `value` (engram_trigrams, mem_035): a
    condition that may use an index under row-level security, where LIKE may not."""
    return func.engram_trigrams(column).bool_op("@>")(func.engram_trigrams(value))


def not_tombstoned() -> ColumnElement[bool]:
    """Entities that were not merged into another."""
    return Entity.merged_into_id.is_(None)


async def get(
    session: AsyncSession,
    *,
    tenant_id: str,
    entity_id: uuid.UUID,
    for_share: bool = False,
    for_update: bool = False,
) -> Entity | None:
    """One entity of the tenant, tombstoned or not, optionally locked.

    FOR SHARE is what a writer anchoring a fact should take: a merge (FOR UPDATE) then waits
    for it, and it waits for a running merge and sees the tombstone afterwards.
    """
    stmt = select(Entity).where(Entity.id == entity_id, Entity.tenant_id == tenant_id)
    if for_share or for_update:
        stmt = stmt.with_for_update(read=not for_update).execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def insert_entity(
    session: AsyncSession,
    *,
    tenant_id: str,
    canonical_name: str,
    entity_type: str,
    aliases: list[str],
    metadata: dict[str, Any],
) -> Entity | None:
    """Insert an entity; None when (tenant, canonical_name, entity_type) is taken."""
    stmt = (
        insert(Entity)
        .values(
            tenant_id=tenant_id,
            canonical_name=canonical_name,
            entity_type=entity_type,
            aliases=aliases,
            metadata_=metadata,
        )
        .on_conflict_do_nothing(constraint="uq_entities_tenant_name_type")
        .returning(Entity)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def name_taken(
    session: AsyncSession,
    *,
    tenant_id: str,
    canonical_name: str,
    entity_type: str,
    exclude_id: uuid.UUID,
) -> bool:
    """True when another entity of the tenant holds this (canonical_name, entity_type)."""
    stmt = select(Entity.id).where(
        Entity.tenant_id == tenant_id,
        Entity.canonical_name == canonical_name,
        Entity.entity_type == entity_type,
        Entity.id != exclude_id,
    )
    return (await session.execute(stmt.limit(1))).first() is not None


async def update_entity(
    session: AsyncSession, *, tenant_id: str, entity_id: uuid.UUID, values: dict[str, Any]
) -> Entity:
    """Apply `values` and set updated_at to now; returns the row."""
    return await update_stamped(
        session, Entity, tenant_id=tenant_id, row_id=entity_id, values=values
    )


@dataclass(frozen=True)
class EntityFilters:
    """What an entity listing keeps; `name` is a case-insensitive substring of the name."""

    entity_type: str | None = None
    name: str | None = None
    include_merged: bool = False
    memory_filter: MemoryFilter | None = None  # a listing's `filter` (app/schemas/filters.py)


async def list_entities(
    session: AsyncSession, *, tenant_id: str, filters: EntityFilters, limit: int, cursor: str | None
) -> tuple[list[Entity], str | None]:
    """A page of the tenant's entities matching `filters`, newest first."""
    stmt = select(Entity).where(
        Entity.tenant_id == tenant_id,
        *equal(Entity, filters, "entity_type"),
        *compile_filter("entity", filters.memory_filter),
    )
    if filters.name is not None:
        pattern = "%" + escape_like(filters.name.lower()) + "%"
        name = func.lower(Entity.canonical_name)
        stmt = stmt.where(
            contains_trigrams(name, filters.name.lower()), name.like(pattern, escape=LIKE_ESCAPE)
        )
    if not filters.include_merged:
        stmt = stmt.where(not_tombstoned())
    return await pagination.list_page(
        session, stmt, order=(Entity.created_at, Entity.id), limit=limit, cursor=cursor
    )


async def lock_pair(
    session: AsyncSession, *, tenant_id: str, ids: tuple[uuid.UUID, uuid.UUID]
) -> dict[uuid.UUID, Entity]:
    """Lock both entities FOR UPDATE in id order (concurrent merges cannot deadlock)."""
    stmt = (
        select(Entity)
        .where(Entity.tenant_id == tenant_id, Entity.id.in_(ids))
        .order_by(Entity.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return {row.id: row for row in (await session.execute(stmt)).scalars()}


# --- resolve ----------------------------------------------------------------------------------

# Tiers 1-2 come from the exact indexes, tier 3 from the trigram indexes (or, for names under
# 3 characters that trigrams cannot serve, from walking (tenant_id, lower(canonical_name)) in
# order until `cap` rows match). `p` is a subquery, not a CTE, so its expressions are inlined.
_LIVE = """e.tenant_id = :tenant_id AND e.merged_into_id IS NULL
          AND (CAST(:entity_type AS text) IS NULL OR e.entity_type = :entity_type)"""
_NAME_TIERS_SQL = text(rf"""
    WITH exact AS (
        SELECT e.id, e.canonical_name, e.entity_type, e.aliases,
               CASE WHEN lower(e.canonical_name) = p.name THEN 1 ELSE 2 END AS tier
        FROM entities AS e, (SELECT lower(CAST(:name AS text)) AS name) AS p
        WHERE {_LIVE}
          AND (lower(e.canonical_name) = p.name
               OR engram_lower_aliases(e.aliases) @> ARRAY[p.name])
        ORDER BY tier, lower(e.canonical_name), e.id
        LIMIT :cap
    ), partial AS (
        SELECT e.id, e.canonical_name, e.entity_type, e.aliases, 3 AS tier
        FROM entities AS e,
             (SELECT '%' || lower(CAST(:escaped AS text)) || '%' AS pattern,
                     engram_trigrams(lower(CAST(:name AS text))) AS trigrams) AS p
        WHERE {_LIVE}
          AND ((engram_trigrams(lower(e.canonical_name)) @> p.trigrams
                AND lower(e.canonical_name) LIKE p.pattern ESCAPE '\')
               OR (engram_trigrams(e.alias_search) @> p.trigrams
                   AND e.alias_search LIKE p.pattern ESCAPE '\'
                   AND EXISTS (SELECT 1 FROM unnest(e.aliases) AS a
                               WHERE lower(a) LIKE p.pattern ESCAPE '\')))
          AND e.id NOT IN (SELECT id FROM exact)
        ORDER BY lower(e.canonical_name), e.id
        LIMIT :cap
    )
    SELECT * FROM (SELECT * FROM exact UNION ALL SELECT * FROM partial) AS found
    ORDER BY tier, lower(canonical_name), id
""")

_FUZZY_SQL = text("""
    SELECT id, canonical_name, entity_type, aliases FROM (
        SELECT e.id, e.canonical_name, e.entity_type, e.aliases,
               greatest(similarity(lower(e.canonical_name), p.name),
                        coalesce((SELECT max(similarity(lower(a), p.name))
                                  FROM unnest(e.aliases) AS a), 0)) AS sim
        FROM entities AS e, (SELECT lower(CAST(:name AS text)) AS name) AS p
        WHERE e.tenant_id = :tenant_id
          AND e.merged_into_id IS NULL
          AND (CAST(:entity_type AS text) IS NULL OR e.entity_type = :entity_type)
          AND e.id <> ALL (CAST(:exclude AS uuid[]))
          AND (lower(e.canonical_name) % p.name OR p.name <% e.alias_search)
    ) AS scored
    WHERE sim >= :threshold
    ORDER BY sim DESC, lower(canonical_name), id
    LIMIT :cap
""")


async def find_by_name(
    session: AsyncSession, *, tenant_id: str, name: str, entity_type: str | None, cap: int
) -> Sequence[Row[Any]]:
    """Live entities whose name or an alias contains `name` (case-insensitive), with the tier:
    1 exact canonical name, 2 exact alias, 3 substring; at most `cap` exact and `cap` substring
    matches, best tier first, then by name."""
    result = await session.execute(
        _NAME_TIERS_SQL,
        {
            "tenant_id": tenant_id,
            "name": name,
            "escaped": escape_like(name),
            "entity_type": entity_type,
            "cap": cap,
        },
    )
    return result.all()


async def prepare_search(session: AsyncSession, *, fuzzy_threshold: float) -> bool:
    """Tune this transaction for name search; True when pg_trgm is installed.

    Plans are made for each call's own pattern (a generic plan cannot know whether a LIKE
    pattern is rare or common and picks one plan for both), and the trigram operators `%` and
    `<%` use `fuzzy_threshold`.
    """
    threshold = str(fuzzy_threshold)
    if (await session.connection()).info.get(SET_LOCAL_KEY):
        # A Citus coordinator: only SET LOCAL reaches the workers that run the search.
        await set_local(
            session,
            {
                "plan_cache_mode": "force_custom_plan",
                "pg_trgm.similarity_threshold": threshold,
                "pg_trgm.word_similarity_threshold": threshold,
            },
        )
        return bool((await session.execute(text(f"SELECT {_TRIGRAM_INSTALLED}"))).scalar_one())
    result = await session.execute(
        text(
            "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), "
            "set_config('pg_trgm.similarity_threshold', :t, true), "
            "set_config('pg_trgm.word_similarity_threshold', :t, true), "
            f"{_TRIGRAM_INSTALLED} AS trigram"
        ),
        {"t": threshold},
    )
    return bool(result.one().trigram)


_TRIGRAM_INSTALLED = "EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm')"


async def find_fuzzy(
    session: AsyncSession,
    *,
    tenant_id: str,
    name: str,
    entity_type: str | None,
    exclude: Sequence[uuid.UUID],
    threshold: float,
    cap: int,
) -> Sequence[Row[Any]]:
    """Live entities whose name or an alias has trigram similarity >= `threshold` to `name`.

    Needs pg_trgm and `prepare_search` called with the same threshold first."""
    result = await session.execute(
        _FUZZY_SQL,
        {
            "tenant_id": tenant_id,
            "name": name,
            "entity_type": entity_type,
            "exclude": list(exclude),
            "threshold": threshold,
            "cap": cap,
        },
    )
    return result.all()


_FACT_TEXTS_SQL = text("""
    SELECT c.entity_id, f.predicate, f.content
    FROM unnest(CAST(:ids AS uuid[])) AS c(entity_id)
    CROSS JOIN LATERAL (
        SELECT predicate, content FROM facts
        WHERE tenant_id = :tenant_id AND entity_id = c.entity_id AND validity = 'active'
        ORDER BY created_at DESC
        LIMIT :per_entity
    ) AS f
""")


async def fact_texts(
    session: AsyncSession, *, tenant_id: str, entity_ids: Sequence[uuid.UUID], per_entity: int
) -> Sequence[Row[Any]]:
    """(entity_id, predicate, content) of up to `per_entity` newest active facts per entity."""
    result = await session.execute(
        _FACT_TEXTS_SQL, {"ids": list(entity_ids), "tenant_id": tenant_id, "per_entity": per_entity}
    )
    return result.all()


# --- merge ------------------------------------------------------------------------------------


async def active_facts(
    session: AsyncSession, *, tenant_id: str, entity_id: uuid.UUID
) -> list[Fact]:
    """The entity's active facts, locked FOR UPDATE in id order."""
    stmt = (
        select(Fact)
        .where(Fact.tenant_id == tenant_id, Fact.entity_id == entity_id, Fact.validity == "active")
        .order_by(Fact.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return list((await session.execute(stmt)).scalars())


async def supersede_facts(
    session: AsyncSession, *, tenant_id: str, fact_ids: Sequence[uuid.UUID]
) -> None:
    """Mark facts superseded: they lost to a fact about the same period, so they are no
    longer believed either."""
    if fact_ids:
        await session.execute(
            update(Fact)
            .where(Fact.tenant_id == tenant_id, Fact.id.in_(fact_ids))
            .values(
                validity="superseded",
                recorded_until=record_end(Fact.created_at, await transaction_now(session)),
            )
            .execution_options(synchronize_session=False)
        )


async def repoint_facts(
    session: AsyncSession, *, tenant_id: str, source_id: uuid.UUID, target_id: uuid.UUID
) -> int:
    """Anchor every fact of the source entity to the target; returns how many moved."""
    result = await session.execute(
        update(Fact)
        .where(Fact.tenant_id == tenant_id, Fact.entity_id == source_id)
        .values(entity_id=target_id)
        .execution_options(synchronize_session=False)
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


async def set_supersedes(
    session: AsyncSession, *, tenant_id: str, winner_id: uuid.UUID, loser_id: uuid.UUID
) -> None:
    """Point the winning fact's supersedes_id at the fact it superseded."""
    await session.execute(
        update(Fact)
        .where(Fact.tenant_id == tenant_id, Fact.id == winner_id)
        .values(supersedes_id=loser_id)
        .execution_options(synchronize_session=False)
    )
