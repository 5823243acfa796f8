"""The process's queue of references counted by reads (recall, context, and every read served
by a replica): added up and written to the primary every `reference_flush_seconds` (sooner
when many memories wait), one transaction per tenant and memory type (so a flush locks one
table at a time and cannot join a lock cycle), and at shutdown. The reads' answers
do not wait for the write (the counting itself: `repositories/references.py`)."""

import asyncio
import logging
import uuid
from collections import defaultdict
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.periodic import Periodic
from app.core.scope import Scope, scoped_transaction
from app.repositories import references as reference_rows
from app.repositories.references import Pending
from app.telemetry.metrics import REFERENCES_DROPPED, REFERENCES_WAITING

logger = logging.getLogger(__name__)

# At most this many memories wait for their counts; a new one past it drops the references
# of the one waiting longest (counted in `engram_references_dropped_total`). From half of it
# on, the counts are written at once rather than at the next interval.
WAITING_LIMIT = 100_000
# How often the queue checks, between writes, whether it is half full.
CROWDED_CHECK_SECONDS = 0.1

Key = tuple[str, str, uuid.UUID]  # tenant, memory type, memory id


class ReferenceQueue:
    """References waiting to be written to the primary, summed per memory."""

    def __init__(
        self,
        sessionmaker: async_sessionmaker[AsyncSession],
        interval_seconds: float,
        *,
        limit: int = WAITING_LIMIT,
    ) -> None:
        self._sessionmaker = sessionmaker
        self._limit = limit
        self._pending: dict[Key, tuple[int, datetime]] = {}
        self._writing: dict[Key, int] = {}  # in the write under way, not committed yet
        self._failed = False
        self._lock = asyncio.Lock()
        self._flushing = Periodic(
            "engram-reference-flush",
            interval_seconds,
            self.flush,
            wake=self._crowded,
            check_seconds=CROWDED_CHECK_SECONDS,
        )

    def add(self, pending: Pending) -> None:
        """Queue references (from `take_pending`)."""
        for tenant_id, memory_type, memory_id, at in pending:
            key = (tenant_id, memory_type, memory_id)
            if key not in self._pending and len(self._pending) >= self._limit:
                dropped, _ = self._pending.pop(next(iter(self._pending)))
                REFERENCES_DROPPED.inc(dropped)
            count_so_far, latest = self._pending.get(key, (0, at))
            self._pending[key] = (count_so_far + 1, max(latest, at))
        REFERENCES_WAITING.set(len(self._pending))

    def queued(self, tenant_id: str, memory_type: str, memory_id: uuid.UUID) -> int:
        """The references of one memory counted in this process and not written yet."""
        key = (tenant_id, memory_type, memory_id)
        return self._pending.get(key, (0,))[0] + self._writing.get(key, 0)

    @property
    def waiting(self) -> int:
        """Memories with references not yet written."""
        return len(self._pending)

    def _crowded(self) -> bool:
        return not self._failed and len(self._pending) * 2 >= self._limit

    async def flush(self) -> None:
        """Write every queued reference now; what fails stays queued for the next flush."""
        async with self._lock:
            batch, self._pending = self._pending, {}
            self._writing = {key: n for key, (n, _) in batch.items()}
            by_tenant: dict[str, dict[str, list[tuple[uuid.UUID, int, datetime]]]] = defaultdict(
                lambda: defaultdict(list)
            )
            for (tenant_id, memory_type, memory_id), (n, at) in batch.items():
                by_tenant[tenant_id][memory_type].append((memory_id, n, at))
            self._failed = False
            try:
                for tenant_id, by_type in by_tenant.items():
                    for memory_type, items in by_type.items():
                        await self._write(tenant_id, memory_type, items)
            finally:
                self._writing = {}
                REFERENCES_WAITING.set(len(self._pending))

    async def _write(
        self, tenant_id: str, memory_type: str, items: list[tuple[uuid.UUID, int, datetime]]
    ) -> None:
        """One tenant's counts of one memory type in one transaction; queued again if it fails."""
        try:
            async with scoped_transaction(
                self._sessionmaker, Scope(tenant_id=tenant_id)
            ) as session:
                await reference_rows.add_references(
                    session,
                    memory_type,
                    tenant_id=tenant_id,
                    ids=[i[0] for i in items],
                    counts=[i[1] for i in items],
                    at=[i[2] for i in items],
                )
        except Exception:  # noqa: BLE001 - the primary is away: keep them for later
            logger.warning("writing reference counts failed; retrying later", exc_info=True)
            self._failed = True
            for memory_id, n, at in items:
                self.add([(tenant_id, memory_type, memory_id, at)] * n)
        finally:
            for memory_id, _, _ in items:
                self._writing.pop((tenant_id, memory_type, memory_id), None)

    def start(self) -> None:
        """Flush every `interval_seconds` in the background."""
        self._flushing.start()

    async def stop(self) -> None:
        """Stop the background flushes (not one midway) and write what is queued."""
        async with self._lock:
            await self._flushing.stop()
        await self.flush()
