"""Switch the store to another embedding model while it serves: build the new model's
vectors in the `embedding_next` columns and their indexes, then swap the columns in one
transaction; drop the previous model's vectors when asked."""

import asyncio
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from tqdm import tqdm

from app.core.scope import SYSTEM, scoped_transaction
from app.core.text import context_text
from app.embedding import Embedder
from app.embedding.remote import RemoteEmbeddingError
from app.repositories import embedding_switches as switch_rows
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import episodes as episode_rows
from app.repositories import vector_columns as vector_rows
from app.services.portability import record_text

logger = logging.getLogger(__name__)

BATCH_SIZE = 256
# The swap waits this long for a table lock before it lets readers and writers go on and
# tries again after a catch-up pass; it does the same when rows were written without the
# target's vector since that pass (the model never runs while the swap holds the lock).
LOCK_TIMEOUT = "2s"
SWAP_ATTEMPTS = 30
# How long the swap tries for the switch's lock, held shared by each embedding transaction.
EXCLUSIVE_WAIT_SECONDS = 5.0
RECORD_KINDS = {
    "runs": "run",
    "run_messages": "run_message",
    "procedures": "procedure",
    "arcs": "arc",
    "agent_events": "agent_event",
}


class SwitchRefused(Exception):
    """The switch cannot start or go on as asked; the message says what to do."""


@dataclass
class SwitchReport:
    """What a switch did and how long each step took."""

    embedded: dict[str, int] = field(default_factory=dict)
    caught_up: int = 0
    sweep_seconds: float = 0.0
    index_seconds: float = 0.0
    swap_seconds: float = 0.0
    swap_attempts: int = 0

    def lines(self) -> list[str]:
        """The report as lines for the command's output."""
        counts = ", ".join(f"{table} {count}" for table, count in self.embedded.items() if count)
        return [
            f"embedded: {counts or 'nothing'} ({self.caught_up} written meanwhile)",
            f"vectors {self.sweep_seconds:.1f} s, indexes {self.index_seconds:.1f} s, "
            f"swap {self.swap_seconds * 1000:.0f} ms ({self.swap_attempts} attempt(s))",
        ]


async def switch_models(
    sessionmaker: async_sessionmaker[AsyncSession],
    embedder: Embedder,
    target: Embedder,
    *,
    progress: bool = True,
) -> SwitchReport:
    """Build `target`'s vectors beside the serving model's, index them, and make `target`
    the serving model in one transaction. Resumes a switch to `target` left unfinished;
    refused while another switch (or drop) runs on the store."""
    async with _one_command(sessionmaker):
        report = SwitchReport()
        started = time.perf_counter()
        next_id = await _begin(sessionmaker, embedder, target)
        report.embedded = await _sweep(sessionmaker, target, next_id, progress=progress)
        report.sweep_seconds = time.perf_counter() - started
        started = time.perf_counter()
        await _build_indexes(sessionmaker, target)
        report.index_seconds = time.perf_counter() - started
        await _swap(sessionmaker, target, next_id, report)
        return report


async def drop_previous(sessionmaker: async_sessionmaker[AsyncSession]) -> str:
    """Drop the previous model's vectors and indexes, kept in `embedding_next` after a
    switch (columns dropped and added again: instant at any size)."""
    async with _one_command(sessionmaker), scoped_transaction(sessionmaker, SYSTEM) as session:
        await _set_lock_timeout(session)
        await _lock_exclusive(session)
        state = await switch_rows.switch_row(session)
        if state is None or state.building or state.next_version_id is None:
            raise SwitchRefused(
                "no previous model's vectors are kept"
                + (": a switch is under way" if state and state.building else "")
            )
        name = await embedding_version_rows.model_name(session, state.next_version_id)
        await _recreate_next(session, await _serving_dimensions(session))
        await switch_rows.clear_next(session)
    return f"dropped the vectors of {name!r}"


@asynccontextmanager
async def _one_command(sessionmaker: async_sessionmaker[AsyncSession]) -> AsyncIterator[None]:
    """Hold the switch command's lock for the block, on a connection of its own (kept out of
    any transaction): a second command is refused at once instead of rebuilding the columns
    and indexes the first one builds. The lock goes with the connection if the process dies."""
    engine: AsyncEngine = sessionmaker.kw["bind"]
    async with engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        if not await switch_rows.try_command_lock(autocommit):
            raise SwitchRefused(
                "another `engram reembed --model` (or `--drop-previous`) is "
                "running on this store: wait for it to end, then run this "
                "command again"
            )
        try:
            yield
        finally:
            try:
                await switch_rows.release_command_lock(autocommit)
            except BaseException as error:
                await connection.invalidate()  # closed, not pooled with the lock held
                if not isinstance(error, Exception):
                    raise
                logger.warning("the switch command's lock went with its connection: %s", error)


async def _begin(
    sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, target: Embedder
) -> int:
    """Record the switch (or find it under way) and give it empty columns; the target's id."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        await vector_rows.lock(session)
        state = await switch_rows.switch_row(session)
        next_id = await embedding_version_rows.version_id(session, target)
        serving_id = (
            state.serving_version_id
            if state is not None and state.serving_version_id is not None
            else await embedding_version_rows.version_id(session, embedder)
        )
        if state is not None and state.building:
            if state.next_version_id == next_id:
                return next_id
            name = await embedding_version_rows.model_name(session, state.next_version_id or 0)
            raise SwitchRefused(
                f"a switch to {name!r} is under way: finish it with "
                f"`engram reembed --model {name}` first"
            )
        if state is not None and state.next_version_id is not None:
            raise SwitchRefused(
                "the previous model's vectors are still kept: drop them "
                "first with `engram reembed --drop-previous`"
            )
        if serving_id == next_id:
            raise SwitchRefused(f"the store already serves {target.model_name!r}")
        await _set_lock_timeout(session)
        await _lock_exclusive(session)
        await _recreate_next(session, target.dimensions)
        await switch_rows.begin(session, serving_id=serving_id, next_id=next_id)
    return next_id


async def _sweep(
    sessionmaker: async_sessionmaker[AsyncSession],
    target: Embedder,
    next_id: int,
    *,
    progress: bool,
) -> dict[str, int]:
    """Embed every row without the target's vector, a committed batch at a time; a remote
    model that fails stops the command, which, run again, goes on from there."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        todo = await switch_rows.uncovered_counts(session, next_id=next_id)
    counts: dict[str, int] = {}
    with tqdm(
        total=sum(todo.values()),
        unit="rows",
        desc="re-embedding",
        disable=not progress,
        mininterval=1.0,
    ) as bar:
        for table in switch_rows.VECTOR_TABLES:
            counts[table], after = 0, None
            while True:
                try:
                    done, after = await _fill_batch(
                        sessionmaker, table, target, next_id, after=after
                    )
                except RemoteEmbeddingError as error:
                    raise SwitchRefused(
                        f"the model {target.model_name!r} failed: {error}. The switch is "
                        f"kept as far as it went and the store still serves the previous "
                        f"model: run `engram reembed --model {target.model_name}` again to "
                        f"finish it"
                    ) from None
                if after is None:
                    break
                counts[table] += done
                bar.update(done)
    return counts


async def _fill_batch(
    sessionmaker: async_sessionmaker[AsyncSession],
    table: str,
    target: Embedder,
    next_id: int,
    *,
    after: str | None,
) -> tuple[int, str | None]:
    """Embed and write one batch of `table`'s rows without the target's vector, after id
    `after` (read, then embedded with no transaction open, then written to the rows not
    changed since); (rows read, the last id, None when none was left)."""
    by_tenant: dict[str, list[dict[str, Any]]] = defaultdict(list)
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        rows = await switch_rows.uncovered_rows(
            session, table, next_id=next_id, after=after, limit=BATCH_SIZE
        )
        for row in rows:
            by_tenant[row["tenant_id"]].append(row)
        texts = {
            tenant_id: await _texts(session, table, tenant_id, tenant_rows, target)
            for tenant_id, tenant_rows in by_tenant.items()
        }
    if not rows:
        return 0, None
    made: list[tuple[uuid.UUID, str, Any]] = []
    for tenant_id, tenant_rows in by_tenant.items():
        kept = [
            (row, text)
            for row, text in zip(tenant_rows, texts[tenant_id], strict=True)
            if text is not None
        ]
        vectors = (
            await target.aembed_batch([text for _, text in kept], tenant_id=tenant_id, bulk=True)
            if kept
            else []
        )
        made.extend(
            (row["id"], row["row_version"], vector)
            for (row, _), vector in zip(kept, vectors, strict=True)
        )
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        await switch_rows.store_next(session, table, next_id=next_id, vectors=made)
    return len(rows), str(rows[-1]["id"])


async def _texts(
    session: AsyncSession, table: str, tenant_id: str, rows: list[dict[str, Any]], target: Embedder
) -> list[str | None]:
    """The text each row's vector is made from, as when it was written (None: a passage
    whose memory is gone)."""
    if table in RECORD_KINDS:
        return [record_text(RECORD_KINDS[table], row)[0] for row in rows]
    if table != "passages":
        return [row["content"] for row in rows]
    episodes: list[uuid.UUID] = [
        row["episode_id"] for row in rows if row["kind"] == "context" and row["episode_id"]
    ]
    before = await episode_rows.turns_before(
        session, tenant_id=tenant_id, ids=episodes, count=target.context_turns
    )
    texts: list[str | None] = []
    for row in rows:
        content = row["content"]
        if content is None:
            texts.append(None)
        elif row["kind"] == "context":
            texts.append(context_text(before.get(row["episode_id"], []), content))
        else:
            texts.append(content[row["start_char"] : row["end_char"]])
    return texts


async def _build_indexes(sessionmaker: async_sessionmaker[AsyncSession], target: Embedder) -> None:
    """Build the indexes `embedding` has on `embedding_next` too, without blocking writes."""
    type_name = vector_rows.column_type(target.dimensions)
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        wanted = [
            (name, vector_rows.with_operator_class(definition, type_name))
            for table in switch_rows.VECTOR_TABLES
            for name, definition in await switch_rows.next_slot_indexes(session, table)
        ]
    engine: AsyncEngine = sessionmaker.kw["bind"]
    async with engine.connect() as connection:
        autocommit = await connection.execution_options(isolation_level="AUTOCOMMIT")
        for name, definition in wanted:
            logger.info("building index %s", name)
            await switch_rows.build_index(autocommit, name, definition)


async def _swap(
    sessionmaker: async_sessionmaker[AsyncSession],
    target: Embedder,
    next_id: int,
    report: SwitchReport,
) -> None:
    """Catch up with the rows written meanwhile (the model runs with no lock held), then, in
    one transaction holding the switch's lock, swap the columns if no row was written
    without the target's vector since; otherwise let searches and writes go on and catch
    up again."""
    for attempt in range(1, SWAP_ATTEMPTS + 1):
        caught = await _sweep(sessionmaker, target, next_id, progress=False)
        report.caught_up += sum(caught.values())
        started = time.perf_counter()
        try:
            async with scoped_transaction(sessionmaker, SYSTEM) as session:
                await _set_lock_timeout(session)
                await _lock_exclusive(session)
                left = await switch_rows.any_uncovered(session, next_id=next_id)
                if not left:
                    await switch_rows.swap(session)
        except (DBAPIError, TimeoutError) as error:
            logger.warning("swap attempt %d gave way to readers and writers: %s", attempt, error)
            continue
        if left:
            logger.info(
                "swap attempt %d: rows were written without the new model's vectors "
                "since the last pass; embedding them first",
                attempt,
            )
            continue
        report.swap_seconds = time.perf_counter() - started
        report.swap_attempts = attempt
        return
    raise SwitchRefused(
        f"the columns could not be swapped in {SWAP_ATTEMPTS} attempts: a "
        "transaction held the tables, or rows were written without the new "
        "model's vectors (by a process not loading it), each time; run the "
        "command again"
    )


async def _lock_exclusive(session: AsyncSession) -> None:
    """Take the switch's lock exclusively, trying while transactions hold it shared (never
    queueing, so no search waits behind the attempt)."""
    deadline = time.monotonic() + EXCLUSIVE_WAIT_SECONDS
    while not await switch_rows.try_lock_exclusive(session):
        if time.monotonic() > deadline:
            raise TimeoutError("embedding transactions held the switch's lock")
        await asyncio.sleep(0.005)


async def _set_lock_timeout(session: AsyncSession) -> None:
    await switch_rows.set_lock_timeout(session, LOCK_TIMEOUT)


async def _recreate_next(session: AsyncSession, dimensions: int) -> None:
    await switch_rows.recreate_next_columns(
        session, type_name=vector_rows.column_type(dimensions), dimensions=dimensions
    )


async def _serving_dimensions(session: AsyncSession) -> int:
    columns = await vector_rows.vector_columns(session)
    return next(column.dimensions for column in columns if column.column == "embedding")
