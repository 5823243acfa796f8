"""The process's queue of references counted by reads served from a replica: added up and
written to the primary every `reference_flush_seconds`, one transaction per tenant (the
counting itself: `repositories/references.py`)."""

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

logger = logging.getLogger(__name__)


class ReferenceQueue:
    """References waiting to be written to the primary, summed per memory."""

    def __init__(
        self, sessionmaker: async_sessionmaker[AsyncSession], interval_seconds: float
    ) -> None:
        self._sessionmaker = sessionmaker
        self._pending: dict[tuple[str, str, uuid.UUID], tuple[int, datetime]] = {}
        self._lock = asyncio.Lock()
        self._flushing = Periodic("engram-reference-flush", interval_seconds, self.flush)

    def add(self, pending: Pending) -> None:
        """Queue references (from `take_pending`)."""
        for tenant_id, memory_type, memory_id, at in pending:
            key = (tenant_id, memory_type, memory_id)
            count_so_far, latest = self._pending.get(key, (0, at))
            self._pending[key] = (count_so_far + 1, max(latest, at))

    @property
    def waiting(self) -> int:
        """Memories with references not yet written."""
        return len(self._pending)

    async def flush(self) -> None:
        """Write every queued reference now; what fails stays queued for the next flush."""
        async with self._lock:
            batch, self._pending = self._pending, {}
            by_tenant: dict[str, dict[str, list[tuple[uuid.UUID, int, datetime]]]] = defaultdict(
                lambda: defaultdict(list)
            )
            for (tenant_id, memory_type, memory_id), (n, at) in batch.items():
                by_tenant[tenant_id][memory_type].append((memory_id, n, at))
            for tenant_id, by_type in by_tenant.items():
                try:
                    async with scoped_transaction(
                        self._sessionmaker, Scope(tenant_id=tenant_id)
                    ) as session:
                        for memory_type, items in by_type.items():
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
                    for memory_type, items in by_type.items():
                        for memory_id, n, at in items:
                            self.add([(tenant_id, memory_type, memory_id, at)] * n)

    def start(self) -> None:
        """Flush every `interval_seconds` in the background."""
        self._flushing.start()

    async def stop(self) -> None:
        """Stop the background flushes and write what is queued."""
        await self._flushing.stop()
        await self.flush()
