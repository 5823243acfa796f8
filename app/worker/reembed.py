"""Re-embed every memory (and its passages) whose vectors were made by another model, or
every memory; embed the memories stored without vectors (the embedding backlog)."""

import logging
import os
import socket
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.periodic import Periodic
from app.core.scope import SYSTEM, scoped_transaction
from app.core.text import context_text
from app.embedding import Embedder
from app.embedding.remote import RemoteEmbeddingError
from app.models import Episode, Fact, Rule
from app.repositories import embedding_versions as embedding_version_rows
from app.repositories import episodes as episode_rows
from app.repositories import reembed as reembed_rows
from app.services.embeddings import Embedded, embed_texts, store_passages

BATCH_SIZE = 256
# The longest the backlog waits between two passes after failures (unless its interval is
# longer): it notices the model is back within this long even with no write or search.
MAX_BACKLOG_WAIT_SECONDS = 60.0
# While it waits, how often it looks whether the model answered since a failure, or whether a
# write was stored without vectors.
RECOVERY_CHECK_SECONDS = 2.0
# A write stored without vectors this long before a pass began may not have been committed
# when the pass read the rows: it brings the next pass forward too.
UNCOMMITTED_SECONDS = 3.0
# How long the backlog's lease lasts; each batch renews it, so a process that died leaves
# the backlog to the others after this long.
LEASE_SECONDS = 300.0

# (count name, memory type, table) of the memories that carry vectors.
MEMORY_TABLES = (("episodes", "episode", Episode), ("facts", "fact", Fact), ("rules", "rule", Rule))

logger = logging.getLogger(__name__)


async def reembed_all(
    sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, *, every: bool = False
) -> dict[str, int]:
    """Re-embed stale rows of every memory table (every tenant: system work), one committed
    batch at a time; a row's passages are made anew from its content. With `every`, every
    row, stale or not (after a change of the passage or context settings)."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        version_id, _ = await embedding_version_rows.ensure_version(
            session,
            model_name=embedder.model_name,
            model_version=embedder.model_version,
            dimensions=embedder.dimensions,
        )
    counts: dict[str, int] = {}
    for name, memory_type, model in MEMORY_TABLES:
        counts[name] = 0
        # Tenant by tenant: on a Citus cluster a locking read must stay on one shard.
        async with scoped_transaction(sessionmaker, SYSTEM) as session:
            tenants = await reembed_rows.tenants_with_rows(
                session, model, stale_for=None if every else version_id
            )
        for tenant_id in tenants:
            after = None
            while True:
                async with scoped_transaction(sessionmaker, SYSTEM) as session:
                    rows = (
                        await reembed_rows.rows_after(
                            session, model, tenant_id=tenant_id, after=after, limit=BATCH_SIZE
                        )
                        if every
                        else await reembed_rows.stale_rows(
                            session,
                            model,
                            tenant_id=tenant_id,
                            version_id=version_id,
                            limit=BATCH_SIZE,
                        )
                    )
                    if not rows:
                        break
                    await _reembed_rows(
                        session, embedder, memory_type, model, tenant_id=tenant_id, rows=rows
                    )
                    counts[name] += len(rows)
                    after = rows[-1][0]
    return counts


async def embed_backlog(
    sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, *, holder: str | None = None
) -> dict[str, int]:
    """Embed the episodes, facts and rules stored without vectors (every tenant: system
    work), a batch at a time: read, then embed with no transaction open, then write in a
    transaction of its own the rows still without vectors.

    A batch the model refuses or answers badly is embedded again a row at a time; a row
    that still fails is set aside (tried again later, `reembed_rows.set_aside`) and the pass
    goes on. An outage of the model ends the pass, leaving the rest for the next. With a
    `holder`, each batch first takes the backlog's lease: a pass another process runs is
    left to it."""
    counts: dict[str, int] = {}
    for name, memory_type, model in MEMORY_TABLES:
        counts[name], after = 0, None
        while True:
            by_tenant: dict[str, list[tuple[uuid.UUID, str]]] = defaultdict(list)
            async with scoped_transaction(sessionmaker, SYSTEM) as session:
                if holder is not None and not await reembed_rows.claim_lease(
                    session, holder=holder, seconds=LEASE_SECONDS
                ):
                    logger.debug("embedding backlog: another process runs the pass")
                    return counts
                rows = await reembed_rows.unembedded_rows(
                    session, model, after=after, limit=BATCH_SIZE
                )
                for row_id, tenant_id, content in rows:
                    by_tenant[tenant_id].append((row_id, content))
                contexts = (
                    {
                        tenant_id: await _contexts(session, embedder, tenant_id, read)
                        for tenant_id, read in by_tenant.items()
                    }
                    if memory_type == "episode"
                    else {}
                )
            if not rows:
                break
            after = rows[-1][0]
            for tenant_id, tenant_rows in by_tenant.items():
                batch = _Batch(
                    memory_type, model, tenant_id, tenant_rows, contexts.get(tenant_id, [])
                )
                try:
                    counts[name] += await _embed_batch(sessionmaker, embedder, batch)
                except RemoteEmbeddingError as error:
                    if error.outage:
                        raise
                    counts[name] += await _embed_singly(sessionmaker, embedder, batch)
    return counts


@dataclass(frozen=True)
class _Batch:
    """One tenant's rows of one memory table, with their episodes' contexts (if any)."""

    memory_type: str
    model: type[Episode] | type[Fact] | type[Rule]
    tenant_id: str
    rows: list[tuple[uuid.UUID, str]]
    contexts: list[str | None]


async def _embed_batch(
    sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, batch: _Batch
) -> int:
    """Embed and store a batch's rows; how many were stored."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        # The model runs before this transaction's first statement.
        embedded = await embed_texts(
            session,
            embedder,
            [content for _, content in batch.rows],
            tenant_id=batch.tenant_id,
            contexts=batch.contexts,
            bulk=True,
            background=True,
        )
        return await _store_embedded(
            session,
            batch.memory_type,
            batch.model,
            tenant_id=batch.tenant_id,
            rows=batch.rows,
            embedded=embedded,
        )


async def _embed_singly(
    sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, batch: _Batch
) -> int:
    """Embed a failed batch's rows one at a time, setting aside each the model refuses or
    answers badly on its own; how many were stored (an outage is raised)."""
    stored = 0
    for index, row in enumerate(batch.rows):
        single = replace(batch, rows=[row], contexts=batch.contexts[index : index + 1])
        try:
            stored += await _embed_batch(sessionmaker, embedder, single)
        except RemoteEmbeddingError as error:
            if error.outage:
                raise
            logger.warning(
                "embedding backlog: %s %s of tenant %s set aside: %s",
                batch.memory_type,
                row[0],
                batch.tenant_id,
                error,
            )
            async with scoped_transaction(sessionmaker, SYSTEM) as session:
                await reembed_rows.set_aside(
                    session, batch.model, rows=[(row[0], batch.tenant_id)], error=str(error)
                )
    return stored


async def _contexts(
    session: AsyncSession, embedder: Embedder, tenant_id: str, rows: list[tuple[uuid.UUID, str]]
) -> list[str | None]:
    """The context texts of a tenant's episodes (None for an episode of no session)."""
    before = await episode_rows.turns_before(
        session,
        tenant_id=tenant_id,
        ids=[row_id for row_id, _ in rows],
        count=embedder.context_turns,
    )
    return [
        context_text(before[row_id], content) if before.get(row_id) else None
        for row_id, content in rows
    ]


async def _store_embedded(
    session: AsyncSession,
    memory_type: str,
    model: type[Episode] | type[Fact] | type[Rule],
    *,
    tenant_id: str,
    rows: list[tuple[uuid.UUID, str]],
    embedded: Embedded,
) -> int:
    """Write the vectors and passages of the rows still without vectors and unchanged since
    they were read (deleted or changed ones are left out); how many were written."""
    kept = await reembed_rows.lock_unembedded(
        session, model, tenant_id=tenant_id, contents=dict(rows)
    )
    indexes = [index for index, (row_id, _) in enumerate(rows) if row_id in kept]
    if not indexes:
        return 0
    ids = [rows[index][0] for index in indexes]
    await reembed_rows.store_vectors(
        session,
        model,
        tenant_id=tenant_id,
        columns={rows[index][0]: embedded.columns(index) for index in indexes},
    )
    await store_passages(
        session,
        memory_type,
        tenant_id=tenant_id,
        memory_ids=ids,
        embedded=embedded.only(indexes),
        replace=True,
    )
    await reembed_rows.forget_failures(session, model, tenant_id=tenant_id, ids=ids)
    return len(ids)


async def unembedded_count(sessionmaker: async_sessionmaker[AsyncSession]) -> int:
    """Memories of every tenant stored without vectors."""
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        return await reembed_rows.unembedded_count(session)


class EmbeddingBacklog:
    """Runs `embed_backlog` every `seconds` in a background task; after a failed pass it
    waits twice as long as before, up to MAX_BACKLOG_WAIT_SECONDS (or `seconds`, if longer),
    or until the model answers a write or a search again; a write stored without vectors
    by a slow model brings the next pass forward too. The backlog is the rows
    themselves, so a restart carries on where the last process stopped; one process at a
    time runs a pass (the others find its lease taken and wait for their next)."""

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], embedder: Embedder, seconds: float
    ) -> None:
        self._sessionmaker = sessionmaker
        self._embedder = embedder
        self.seconds = seconds
        self._failed_at: float | None = None
        # Writes deferred before this were committed when a pass read the rows.
        self._covered_until = 0.0
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._passes = Periodic(
            "embedding-backlog",
            seconds,
            self._pass,
            wake=self._worth_a_pass_now,
            check_seconds=RECOVERY_CHECK_SECONDS,
        )

    @property
    def wait(self) -> float:
        """Seconds until the next pass."""
        return self._passes.seconds

    async def run_once(self) -> dict[str, int] | None:
        """One pass; None if it failed (the next waits longer)."""
        self._covered_until = time.monotonic() - UNCOMMITTED_SECONDS
        try:
            counts = await embed_backlog(self._sessionmaker, self._embedder, holder=self.holder)
        except Exception as error:  # noqa: BLE001 - any failure is retried later
            self._passes.seconds = min(self.wait * 2, max(self.seconds, MAX_BACKLOG_WAIT_SECONDS))
            self._failed_at = time.monotonic()
            logger.warning("embedding backlog: pass failed, next in %.0f s: %s", self.wait, error)
            return None
        finally:
            await self._release()
        self._passes.seconds = self.seconds
        self._failed_at = None
        if any(counts.values()):
            logger.info("embedding backlog: embedded %s", counts)
        return counts

    async def _release(self) -> None:
        """Give the lease back, so another process may run the next pass at once."""
        try:
            async with scoped_transaction(self._sessionmaker, SYSTEM) as session:
                await reembed_rows.release_lease(session, holder=self.holder)
        except Exception as error:  # noqa: BLE001 - the lease then simply runs out
            logger.warning("embedding backlog: lease not released: %s", error)

    def _worth_a_pass_now(self) -> bool:
        """After a failed pass, once the model has answered since; otherwise, once a write
        was stored without vectors (a slow model) that the last pass may not have seen."""
        if self._failed_at is not None:
            return self._embedder.answered_at > self._failed_at
        return self._embedder.deferred_at > self._covered_until

    async def _pass(self) -> None:
        await self.run_once()

    def start(self) -> None:
        """Start the passes in the background."""
        self._passes.start()

    async def stop(self) -> None:
        """Stop the passes and wait until the running one has ended."""
        await self._passes.stop()


async def _reembed_rows(
    session: AsyncSession,
    embedder: Embedder,
    memory_type: str,
    model: type[Episode] | type[Fact] | type[Rule],
    *,
    tenant_id: str,
    rows: list[tuple[uuid.UUID, str]],
) -> None:
    """New vectors and passages (windows, and episodes' contexts) for one tenant's rows."""
    ids = [row_id for row_id, _ in rows]
    contexts = (
        await _contexts(session, embedder, tenant_id, rows)
        if memory_type == "episode"
        else [None] * len(rows)
    )
    embedded = await embed_texts(
        session,
        embedder,
        [content for _, content in rows],
        tenant_id=tenant_id,
        contexts=contexts,
        bulk=True,
    )
    await reembed_rows.store_vectors(
        session,
        model,
        tenant_id=tenant_id,
        columns={row_id: embedded.columns(index) for index, row_id in enumerate(ids)},
    )
    await store_passages(
        session, memory_type, tenant_id=tenant_id, memory_ids=ids, embedded=embedded, replace=True
    )
