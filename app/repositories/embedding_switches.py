"""The store's switch of embedding models: which model's vectors each of the two vector
columns holds, read under the switch's lock, and the columns' swap."""

import re
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.core.errors import Unavailable
from app.core.scope import begin_with, transaction_memo
from app.embedding import Embedder
from app.embedding.vectors import EmbeddingVector
from app.models.vector import Vector
from app.repositories import embedding_versions as embedding_version_rows

# The tables with an `embedding` column and its `embedding_next` slot.
VECTOR_TABLES = (
    "episodes",
    "facts",
    "rules",
    "passages",
    "runs",
    "run_messages",
    "procedures",
    "arcs",
    "agent_events",
)
# A row's vector columns, as every write sets them.
VECTOR_COLUMNS = (
    "embedding",
    "embedding_version_id",
    "embedding_next",
    "embedding_next_version_id",
)
# pg_advisory_xact_lock key of the swap ("swap"); embedding_slots() takes it shared.
SWITCH_LOCK = 0x73776170
# pg_try_advisory_lock key ("rmbd") held, on a connection of its own, for the whole life of
# the command that switches models or drops the previous model's vectors: one at a time.
COMMAND_LOCK = 0x726D6264
_COLUMN = re.compile(r"\bembedding\b")
_STATE_MEMO = "embedding_switch_state"


@dataclass(frozen=True)
class SwitchState:
    """The switch's row: `serving` made the vectors in `embedding`; `next` made (or is making,
    while `building`) those in `embedding_next`. No row: the store never switched models."""

    serving_version_id: int | None
    next_version_id: int | None
    building: bool


@dataclass(frozen=True)
class SlotModels:
    """This transaction's models: `serving`'s vectors go in `embedding` (and queries are
    embedded by it); `next`'s in `embedding_next`, which a write clears when `next` is None."""

    serving: Embedder
    serving_id: int
    next: Embedder | None
    next_id: int | None


async def state(session: AsyncSession) -> SwitchState:
    """The switch's state, with the switch's lock held shared until the transaction ends, so
    the columns cannot be swapped under it (read once a transaction)."""
    memo = transaction_memo(session)
    if _STATE_MEMO not in memo:
        row = await begin_with(
            session, "s.serving_version_id, s.next_version_id, s.building FROM embedding_slots() s"
        )
        memo = transaction_memo(session)  # the transaction began: remember in its own
        memo[_STATE_MEMO] = SwitchState(row[0], row[1], bool(row[2]))
    known: SwitchState = memo[_STATE_MEMO]
    return known


async def slot_models(
    session: AsyncSession, embedder: Embedder, *, writing: bool = True
) -> SlotModels:
    """Which of the process's models (`embedder` and `embedder.next`) fill which column in
    this transaction (`writing`: with the serving model's embedding_versions id, recorded
    the first time); 503 when the store serves a model the process did not load."""
    current = await state(session)
    if current.serving_version_id is None:
        embedder.slot_hint = (embedder, None)
        return SlotModels(
            embedder,
            await embedding_version_rows.version_id(session, embedder) if writing else 0,
            None,
            None,
        )
    models = [embedder, *([embedder.next] if embedder.next is not None else [])]
    ids = {await embedding_version_rows.known_version_id(session, model): model for model in models}
    serving_id = current.serving_version_id
    serving = ids.get(serving_id)
    if serving is None:
        name = await embedding_version_rows.model_name(session, serving_id)
        raise Unavailable(
            f"this store now serves the embedding model {name!r}, which this "
            f"process did not load: restart it with ENGRAM_EMBEDDING_MODEL "
            f"(and the other ENGRAM_EMBEDDING_ settings) naming that model"
        )
    following = (
        ids.get(current.next_version_id)
        if current.building and current.next_version_id is not None
        else None
    )
    embedder.slot_hint = (serving, following)
    return SlotModels(
        serving, serving_id, following, current.next_version_id if following is not None else None
    )


async def switch_row(session: AsyncSession) -> SwitchState | None:
    """The switch's row without taking the lock; None if the store never switched."""
    row = (
        await session.execute(
            text(
                "SELECT serving_version_id, next_version_id, state = 'building' AS building "
                "FROM embedding_switches"
            )
        )
    ).one_or_none()
    return None if row is None else SwitchState(row[0], row[1], bool(row[2]))


async def begin(session: AsyncSession, *, serving_id: int, next_id: int) -> None:
    """Record that `next_id`'s vectors are being built beside `serving_id`'s."""
    await session.execute(
        text("""
        INSERT INTO embedding_switches (id, serving_version_id, next_version_id, state)
        VALUES (1, :serving, :next, 'building')
        ON CONFLICT (id) DO UPDATE SET serving_version_id = EXCLUDED.serving_version_id,
            next_version_id = EXCLUDED.next_version_id, state = 'building',
            started_at = now(), switched_at = NULL"""),
        {"serving": serving_id, "next": next_id},
    )


async def try_lock_exclusive(session: AsyncSession) -> bool:
    """Take the switch's lock exclusively if no transaction holds it; False otherwise."""
    return bool(
        (
            await session.execute(
                text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": SWITCH_LOCK}
            )
        ).scalar_one()
    )


async def try_command_lock(connection: AsyncConnection) -> bool:
    """Take the switch command's lock for the connection's session; False if another
    session holds it."""
    return bool(
        (
            await connection.execute(
                text("SELECT pg_try_advisory_lock(:key)"), {"key": COMMAND_LOCK}
            )
        ).scalar_one()
    )


async def release_command_lock(connection: AsyncConnection) -> None:
    """Give back the switch command's lock taken on this connection."""
    await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": COMMAND_LOCK})


async def next_slot_indexes(session: AsyncSession, table: str) -> list[tuple[str, str]]:
    """(name, definition) of each index of `table` on `embedding`, as the same index on
    `embedding_next` (named with `_next`)."""
    return [
        (
            f"{name}_next",
            _COLUMN.sub("embedding_next", definition).replace(
                f"INDEX {name} ", f"INDEX CONCURRENTLY IF NOT EXISTS {name}_next ", 1
            ),
        )
        for name, definition in await _indexes_on(session, table, "embedding")
    ]


async def _indexes_on(session: AsyncSession, table: str, column: str) -> list[tuple[str, str]]:
    """(name, definition) of `table`'s indexes on `column` (`embedding` or `embedding_next`)."""
    rows = await session.execute(
        text("""
        SELECT c.relname, pg_get_indexdef(i.indexrelid)
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = CAST(:table AS regclass)
           AND pg_get_indexdef(i.indexrelid) ~ :pattern"""),
        {"table": table, "pattern": f"\\m{column}\\M"},
    )
    return [(name, definition) for name, definition in rows]


async def swap(session: AsyncSession) -> None:
    """Swap `embedding` and `embedding_next` (and their version ids and indexes) in every
    table, and record the switch (in the caller's transaction, with the lock held)."""
    for table in VECTOR_TABLES:
        current = [name for name, _ in await _indexes_on(session, table, "embedding")]
        following = [name for name, _ in await _indexes_on(session, table, "embedding_next")]
        for old, new in (
            ("embedding", "embedding_swap"),
            ("embedding_next", "embedding"),
            ("embedding_swap", "embedding_next"),
            ("embedding_version_id", "embedding_version_swap"),
            ("embedding_next_version_id", "embedding_version_id"),
            ("embedding_version_swap", "embedding_next_version_id"),
        ):
            await session.execute(text(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}"))
        for name in current:
            await session.execute(text(f"ALTER INDEX {name} RENAME TO {name}_swap"))
        for name in following:
            await session.execute(
                text(f"ALTER INDEX {name} RENAME TO {name.removesuffix('_next')}")
            )
        for name in current:
            await session.execute(text(f"ALTER INDEX {name}_swap RENAME TO {name}_next"))
    await session.execute(
        text("""
        UPDATE embedding_switches SET serving_version_id = next_version_id,
            next_version_id = serving_version_id, state = 'switched', switched_at = now()""")
    )


async def clear_next(session: AsyncSession) -> None:
    """Record that `embedding_next` holds no model's vectors any more."""
    await session.execute(text("UPDATE embedding_switches SET next_version_id = NULL"))


# The columns each table's embedded text is made from (passages: from their owner's).
TEXT_COLUMNS = {
    "episodes": ("content",),
    "facts": ("content",),
    "rules": ("content",),
    "runs": ("task_id", "summary"),
    "run_messages": ("content",),
    "procedures": ("name", "description", "steps"),
    "arcs": ("title", "summary", "outcome", "lessons"),
    "agent_events": ("content",),
}
_UNCOVERED = "(t.embedding_next IS NULL OR t.embedding_next_version_id IS DISTINCT FROM :next)"


async def uncovered_rows(
    session: AsyncSession, table: str, *, next_id: int, after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Up to `limit` rows of `table` (by id, after `after`) without `next_id`'s vector, each
    with its id, tenant, row version (`xmin`) and the columns its text is made from."""
    if table == "passages":
        columns = (
            "t.kind, t.start_char, t.end_char, t.episode_id, "
            "coalesce(e.content, f.content, r.content) AS content"
        )
        source = (
            "passages t LEFT JOIN episodes e ON e.id = t.episode_id "
            "LEFT JOIN facts f ON f.id = t.fact_id LEFT JOIN rules r ON r.id = t.rule_id"
        )
    else:
        columns = ", ".join(f"t.{column}" for column in TEXT_COLUMNS[table])
        source = f"{table} t"
    rows = await session.execute(
        text(
            f"SELECT t.id, t.tenant_id, t.xmin::text AS row_version, {columns} FROM {source} "
            f"WHERE {_UNCOVERED} AND (CAST(:after AS uuid) IS NULL OR t.id > CAST(:after AS uuid)) "
            f"ORDER BY t.id LIMIT :limit"
        ),
        {"next": next_id, "after": after, "limit": limit},
    )
    return [dict(row._mapping) for row in rows]


async def store_next(
    session: AsyncSession,
    table: str,
    *,
    next_id: int,
    vectors: list[tuple[uuid.UUID, str, EmbeddingVector]],
) -> None:
    """Write `next_id`'s vectors, (id, row version, vector), into rows not changed since."""
    if not vectors:
        return
    stmt = text(
        f"UPDATE {table} SET embedding_next = :vector, embedding_next_version_id = :next "
        f"WHERE id = :id AND xmin::text = :row_version"
    ).bindparams(bindparam("vector", type_=Vector()))
    await session.execute(
        stmt,
        [
            {"id": row_id, "row_version": version, "vector": vector, "next": next_id}
            for row_id, version, vector in vectors
        ],
    )


async def any_uncovered(session: AsyncSession, *, next_id: int) -> bool:
    """Whether a row of any table lacks `next_id`'s vector."""
    for table in VECTOR_TABLES:
        if (
            await session.execute(
                text(f"SELECT EXISTS (SELECT FROM {table} t WHERE {_UNCOVERED})"), {"next": next_id}
            )
        ).scalar_one():
            return True
    return False


async def uncovered_counts(session: AsyncSession, *, next_id: int) -> dict[str, int]:
    """How many rows of each table lack `next_id`'s vector."""
    counts = {}
    for table in VECTOR_TABLES:
        counts[table] = int(
            (
                await session.execute(
                    text(f"SELECT count(*) FROM {table} t WHERE {_UNCOVERED}"), {"next": next_id}
                )
            ).scalar_one()
        )
    return counts


async def recreate_next_columns(session: AsyncSession, *, type_name: str, dimensions: int) -> None:
    """Give every table an empty `embedding_next` of this type and dimension (dropped and
    added: no table is rewritten; its indexes go with it)."""
    for table in VECTOR_TABLES:
        await session.execute(
            text(
                f"ALTER TABLE {table} DROP COLUMN embedding_next, "
                f"ADD COLUMN embedding_next {type_name}({dimensions})"
            )
        )


async def set_lock_timeout(session: AsyncSession, timeout: str) -> None:
    """Give up on a table lock after `timeout` (a PostgreSQL interval) in this transaction."""
    await session.execute(text(f"SET LOCAL lock_timeout = '{timeout}'"))


async def build_index(connection: AsyncConnection, name: str, definition: str) -> None:
    """Run a CREATE INDEX CONCURRENTLY on an autocommit `connection`, first dropping an
    invalid index of that name left by a build that was interrupted."""
    valid = (
        await connection.execute(
            text("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(:name)"),
            {"name": name},
        )
    ).scalar_one_or_none()
    if valid is False:
        await connection.execute(text(f"DROP INDEX CONCURRENTLY {name}"))
    await connection.execute(text(definition))
