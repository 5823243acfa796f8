"""Export and import SQL: a tenant's rows table by table, columns by their stored names."""

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sqlalchemy import Column, Table, bindparam, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Entity, Episode, Fact, MemoryLink, Procedure, Rule, RuleApplication
from app.repositories.links import LINKABLE
from app.repositories.memories import to_tsvector

# The record kinds, in the order an import can insert them (references point backwards;
# the self-references merged_into_id and supersedes_id are set once every row is in).
TABLES: dict[str, Table] = {
    "entity": Entity.__table__,  # type: ignore[dict-item]
    "episode": Episode.__table__,  # type: ignore[dict-item]
    "fact": Fact.__table__,  # type: ignore[dict-item]
    "rule": Rule.__table__,  # type: ignore[dict-item]
    "rule_application": RuleApplication.__table__,  # type: ignore[dict-item]
    "link": MemoryLink.__table__,  # type: ignore[dict-item]
}
MEMORY_KINDS = ("episode", "fact", "rule")
# Derived from content (re-made on import) or process-local: never exported.
NOT_EXPORTED = frozenset({"embedding", "search_vector", "embedding_version_id"})
SELF_REFERENCES = {"entity": "merged_into_id", "fact": "supersedes_id"}
EXPORT_BATCH = 500
LINK_ENDS: dict[str, Any] = {**LINKABLE, "procedure": Procedure}


def exported_columns(kind: str) -> list[Column[Any]]:
    """The columns of a kind that export writes and import reads."""
    return [column for column in TABLES[kind].columns if column.name not in NOT_EXPORTED]


async def stream_rows(session: AsyncSession, *, kind: str,
                      tenant_id: str) -> AsyncIterator[dict[str, Any]]:
    """The tenant's rows of a kind, oldest first, as {column name: value}."""
    table = TABLES[kind]
    order = [table.c.created_at, *table.primary_key.columns]
    stmt = (select(*exported_columns(kind)).where(table.c.tenant_id == tenant_id)
            .order_by(*order).execution_options(yield_per=EXPORT_BATCH))
    result = await session.stream(stmt)
    async for row in result.mappings():
        yield dict(row)


async def insert_rows(session: AsyncSession, *, kind: str,
                      rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows of a kind, keys being column names; a memory's rows also carry
    `search_text` (for its tsvector), `embedding` and `embedding_version_id`."""
    if not rows:
        return
    stmt = insert(TABLES[kind])
    if kind in MEMORY_KINDS:
        stmt = stmt.values(search_vector=to_tsvector(bindparam("search_text")))
    await session.execute(stmt, list(rows))


async def set_self_references(session: AsyncSession, *, kind: str, tenant_id: str,
                              pairs: Sequence[tuple[uuid.UUID, uuid.UUID]]) -> None:
    """Set merged_into_id / supersedes_id of imported rows: (row id, referenced id) pairs."""
    if not pairs:
        return
    table = TABLES[kind]
    column = SELF_REFERENCES[kind]
    stmt = (update(table).where(table.c.id == bindparam("row_id"),
                                table.c.tenant_id == tenant_id)
            .values({column: bindparam("ref_id")}))
    await session.execute(stmt, [{"row_id": row_id, "ref_id": ref_id}
                                 for row_id, ref_id in pairs])


# Each query finds an imported row of the tenant that points at another tenant's row.
def _outside(table: str, column: str, target: str) -> str:
    # Counts references the tenant cannot see inside itself: the foreign key says the row
    # exists, so it is another tenant's (and row-level security hides it, so ask this way).
    return (f"SELECT count(*) FROM {table} f WHERE f.tenant_id = :t "
            f"AND f.{column} IS NOT NULL AND NOT EXISTS "
            f"(SELECT 1 FROM {target} x WHERE x.id = f.{column} AND x.tenant_id = :t)")


def _link_end(side: str) -> str:
    """True when the link's `side` end is a row of the tenant, of the table its type names."""
    return "(" + " OR ".join(
        f"(l.{side}_type = '{end}' AND EXISTS (SELECT 1 FROM {model.__tablename__} x "
        f"WHERE x.id = l.{side}_id AND x.tenant_id = :t))"
        for end, model in LINK_ENDS.items()) + ")"


_FOREIGN_REFERENCES = {
    "fact.entity_id": _outside("facts", "entity_id", "entities"),
    "fact.source_episode_id": _outside("facts", "source_episode_id", "episodes"),
    "fact.supersedes_id": _outside("facts", "supersedes_id", "facts"),
    "rule.source_episode_id": _outside("rules", "source_episode_id", "episodes"),
    "entity.merged_into_id": _outside("entities", "merged_into_id", "entities"),
    "rule_application.rule_id": _outside("rule_applications", "rule_id", "rules"),
    "link": (f"SELECT count(*) FROM memory_links l WHERE l.tenant_id = :t "
             f"AND NOT ({_link_end('source')} AND {_link_end('target')})"),
}


async def references_outside(session: AsyncSession, *, tenant_id: str) -> list[str]:
    """The reference fields through which the tenant's rows point outside the tenant (or a
    link at a row the tenant does not have)."""
    found = []
    for field, query in _FOREIGN_REFERENCES.items():
        if (await session.execute(text(query), {"t": tenant_id})).scalar_one():
            found.append(field)
    return found
