"""Export and import SQL: a tenant's rows table by table, columns by their stored names."""

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import Column, Table, bindparam, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import (
    AgentEvent,
    Arc,
    Entity,
    Episode,
    Fact,
    FactPeriod,
    MemoryLink,
    Procedure,
    ReflectionConsolidation,
    Rule,
    RuleApplication,
    Run,
    RunFeedback,
    RunMessage,
    WorkingMemory,
)
from app.repositories.links import LINKABLE
from app.repositories.memories import BOUND_SEARCH_COLUMNS, with_documents

# The record kinds, in the order an import can insert them (references point backwards;
# the self-references merged_into_id and supersedes_id are set once every row is in).
TABLES: dict[str, Table] = {
    "entity": Entity.__table__,  # type: ignore[dict-item]
    "episode": Episode.__table__,  # type: ignore[dict-item]
    "fact": Fact.__table__,  # type: ignore[dict-item]
    "fact_period": FactPeriod.__table__,  # type: ignore[dict-item]
    "rule": Rule.__table__,  # type: ignore[dict-item]
    "rule_application": RuleApplication.__table__,  # type: ignore[dict-item]
    "run": Run.__table__,  # type: ignore[dict-item]
    "run_message": RunMessage.__table__,  # type: ignore[dict-item]
    "run_feedback": RunFeedback.__table__,  # type: ignore[dict-item]
    "agent_event": AgentEvent.__table__,  # type: ignore[dict-item]
    "reflection_consolidation": ReflectionConsolidation.__table__,  # type: ignore[dict-item]
    "procedure": Procedure.__table__,  # type: ignore[dict-item]
    "arc": Arc.__table__,  # type: ignore[dict-item]
    "working_memory": WorkingMemory.__table__,  # type: ignore[dict-item]
    "link": MemoryLink.__table__,  # type: ignore[dict-item]
}
MEMORY_KINDS = ("episode", "fact", "rule")
# Kinds with an embedding and a tsvector but no passages: import makes both from their text.
RECORD_KINDS = ("run", "run_message", "agent_event", "procedure", "arc")
# Derived from content (re-made on import) or process-local: never exported.
NOT_EXPORTED = frozenset(
    {
        "embedding",
        "search_vector",
        "search_config",
        "embedding_version_id",
        "embedding_next",
        "embedding_next_version_id",
    }
)
SELF_REFERENCES = {"entity": "merged_into_id", "fact": "supersedes_id"}
# Export order of the kinds whose rows a generated `position` orders: import inserts them in
# line order, so they get new positions in the same order.
ORDER_COLUMNS = {
    "run_message": "position",
    "agent_event": "position",
    "reflection_consolidation": "consolidated_at",
    "fact_period": "recorded_at",
}
EXPORT_BATCH = 500
# A line's `kind` names its record kind, so a column named `kind` travels under another name.
RENAMED_FIELDS = {("agent_event", "kind"): "event_kind"}
LINK_ENDS: dict[str, Any] = {**LINKABLE, "procedure": Procedure}


async def any_id_in_use(session: AsyncSession, *, kind: str, ids: Sequence[uuid.UUID]) -> bool:
    """Whether a row of `kind` in any tenant has one of `ids` (a system-scope session)."""
    table = TABLES[kind]
    key = table.c.id if "id" in table.c else table.c.event_id
    found = await session.execute(select(key).where(key.in_(list(ids))).limit(1))
    return found.first() is not None


def _exported(column: Column[Any]) -> bool:
    # Identity and computed columns are made by PostgreSQL, never written.
    return column.name not in NOT_EXPORTED and column.identity is None and column.computed is None


def exported_columns(kind: str) -> list[Column[Any]]:
    """The columns of a kind that export writes and import reads."""
    return [column for column in TABLES[kind].columns if _exported(column)]


def exported_fields(kind: str) -> dict[str, Column[Any]]:
    """The exported columns of a kind by the name of their field in a line."""
    return {
        RENAMED_FIELDS.get((kind, column.name), column.name): column
        for column in exported_columns(kind)
    }


async def stream_rows(
    session: AsyncSession, *, kind: str, tenant_id: str
) -> AsyncIterator[dict[str, Any]]:
    """The tenant's rows of a kind, oldest first (append order where there is one), as
    {column name: value}."""
    table = TABLES[kind]
    first = table.c[ORDER_COLUMNS.get(kind, "created_at")]
    order = [first, *table.primary_key.columns]
    fields = [column.label(name) for name, column in exported_fields(kind).items()]
    stmt = (
        select(*fields)
        .where(table.c.tenant_id == tenant_id)
        .order_by(*order)
        .execution_options(yield_per=EXPORT_BATCH)
    )
    result = await session.stream(stmt)
    async for row in result.mappings():
        yield dict(row)


async def insert_rows(session: AsyncSession, *, kind: str, rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows of a kind in order, keys being column names; the rows of a memory or of
    a searchable record also carry `search_text` (for its tsvector), `embedding` and
    `embedding_version_id`."""
    if not rows:
        return
    stmt = insert(TABLES[kind])
    if kind in MEMORY_KINDS or kind in RECORD_KINDS:
        stmt = stmt.values(**BOUND_SEARCH_COLUMNS)
        rows = await with_documents(rows)
    await session.execute(stmt, list(rows))


async def set_self_references(
    session: AsyncSession,
    *,
    kind: str,
    tenant_id: str,
    pairs: Sequence[tuple[uuid.UUID, uuid.UUID]],
) -> None:
    """Set merged_into_id / supersedes_id of imported rows: (row id, referenced id) pairs."""
    if not pairs:
        return
    table = TABLES[kind]
    column = SELF_REFERENCES[kind]
    stmt = (
        update(table)
        .where(table.c.id == bindparam("row_id"), table.c.tenant_id == tenant_id)
        .values({column: bindparam("ref_id")})
    )
    await session.execute(stmt, [{"row_id": row_id, "ref_id": ref_id} for row_id, ref_id in pairs])


# Each query finds an imported row of the tenant that points at another tenant's row.
def _outside(table: str, column: str, target: str) -> str:
    # Counts references the tenant cannot see inside itself: the foreign key says the row
    # exists, so it is another tenant's (and row-level security hides it, so ask this way).
    return (
        f"SELECT count(*) FROM {table} f WHERE f.tenant_id = :t "
        f"AND f.{column} IS NOT NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {target} x WHERE x.id = f.{column} AND x.tenant_id = :t)"
    )


def _link_end(side: str) -> str:
    """True when the link's `side` end is a row of the tenant, of the table its type names."""
    return (
        "("
        + " OR ".join(
            f"(l.{side}_type = '{end}' AND EXISTS (SELECT 1 FROM {model.__tablename__} x "
            f"WHERE x.id = l.{side}_id AND x.tenant_id = :t))"
            for end, model in LINK_ENDS.items()
        )
        + ")"
    )


_FOREIGN_REFERENCES = {
    "fact.entity_id": _outside("facts", "entity_id", "entities"),
    "fact.source_episode_id": _outside("facts", "source_episode_id", "episodes"),
    "fact.supersedes_id": _outside("facts", "supersedes_id", "facts"),
    "fact_period.fact_id": _outside("fact_periods", "fact_id", "facts"),
    "rule.source_episode_id": _outside("rules", "source_episode_id", "episodes"),
    "entity.merged_into_id": _outside("entities", "merged_into_id", "entities"),
    "rule_application.rule_id": _outside("rule_applications", "rule_id", "rules"),
    "run_message.run_id": _outside("run_messages", "run_id", "runs"),
    "run_feedback.run_id": _outside("run_feedback", "run_id", "runs"),
    "run_feedback.lesson_rule_id": _outside("run_feedback", "lesson_rule_id", "rules"),
    "reflection_consolidation.event_id": _outside(
        "reflection_consolidations", "event_id", "agent_events"
    ),
    "procedure.superseded_by": _outside("procedures", "superseded_by", "procedures"),
    "link": (
        f"SELECT count(*) FROM memory_links l WHERE l.tenant_id = :t "
        f"AND NOT ({_link_end('source')} AND {_link_end('target')})"
    ),
}


async def references_outside(session: AsyncSession, *, tenant_id: str) -> list[str]:
    """The reference fields through which the tenant's rows point outside the tenant (or a
    link at a row the tenant does not have)."""
    found = []
    for field, query in _FOREIGN_REFERENCES.items():
        if (await session.execute(text(query), {"t": tenant_id})).scalar_one():
            found.append(field)
    return found
