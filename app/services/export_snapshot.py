"""GET /v1/export's snapshot: read whole into a spool in one REPEATABLE READ transaction, then
sent with no connection held, so a slow reader keeps no connection from other requests; a
tenant has at most `export.max_per_tenant` exports under way in a process."""

import asyncio
import weakref
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from tempfile import SpooledTemporaryFile
from typing import cast

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.config import ExportSettings
from app.core.errors import TooManyRequests, Unavailable, is_statement_timeout
from app.services import butler_limits
from app.services.portability import export_lines

CHUNK_BYTES = 64 * 1024
RETRY_AFTER_SECONDS = 10


class ExportSlots:
    """How many exports each tenant has under way in this process."""

    def __init__(self) -> None:
        self._held: Counter[str] = Counter()

    def take(self, tenant_id: str, limit: int) -> Callable[[], None]:
        """A slot of the tenant's, and the function that gives it back (once, whenever it is
        called again); TooManyRequests when the tenant has `limit` already."""
        if self._held[tenant_id] >= limit:
            raise TooManyRequests(
                f"{limit} export(s) of this tenant are under way (export.max_per_tenant); "
                "retry when one has ended",
                retry_after=RETRY_AFTER_SECONDS,
            )
        self._held[tenant_id] += 1
        given_back = False

        def give_back() -> None:
            nonlocal given_back
            if not given_back:
                given_back = True
                self._held[tenant_id] -= 1
                if self._held[tenant_id] <= 0:
                    del self._held[tenant_id]

        return give_back

    def held(self, tenant_id: str) -> int:
        """The tenant's exports under way."""
        return self._held[tenant_id]


class Snapshot:
    """A tenant's export read in full, waiting to be sent; it holds the tenant's slot until
    it is sent, closed, or dropped."""

    def __init__(
        self, spool: "SpooledTemporaryFile[bytes]", size: int, give_back: Callable[[], None]
    ) -> None:
        self.spool = spool
        self.size = size
        self._give_back = give_back
        # A response that is never sent still gives the slot back when it is dropped.
        weakref.finalize(self, give_back)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The export piece by piece; the spool closed and the slot given back at the end,
        however it ends."""
        try:
            self.spool.seek(0)
            while chunk := await asyncio.to_thread(self.spool.read, CHUNK_BYTES):
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        """Drop the spool and give the slot back."""
        self.spool.close()
        self._give_back()


async def export_snapshot(
    sessionmaker: async_sessionmaker[AsyncSession],
    *,
    tenant_id: str,
    settings: ExportSettings,
    slots: ExportSlots,
) -> Snapshot:
    """Every line of the tenant's export (`portability.export_lines`), read from one snapshot
    into a spool within `settings.snapshot_seconds`, its connection given back before any of
    it is sent. Forbidden for a key limited to butlers; TooManyRequests past the tenant's
    exports under way; Unavailable when the snapshot takes too long."""
    butler_limits.check_unlimited("the export of the whole tenant")
    give_back = slots.take(tenant_id, settings.max_per_tenant)
    spool: SpooledTemporaryFile[bytes] = SpooledTemporaryFile(max_size=settings.spool_memory_bytes)
    try:
        size = await asyncio.wait_for(
            _spool(sessionmaker, tenant_id, spool, settings), settings.snapshot_seconds
        )
    except BaseException as error:
        spool.close()
        give_back()
        if isinstance(error, TimeoutError | _SnapshotCanceled):
            raise Unavailable(
                f"reading the export took longer than "
                f"{settings.snapshot_seconds:g} s (export.snapshot_seconds)",
                retry_after=RETRY_AFTER_SECONDS,
            ) from None
        raise
    return Snapshot(spool, size, give_back)


class _SnapshotCanceled(Exception):
    """PostgreSQL canceled a statement of the snapshot at its statement timeout."""


async def _spool(
    sessionmaker: async_sessionmaker[AsyncSession],
    tenant_id: str,
    spool: "SpooledTemporaryFile[bytes]",
    settings: ExportSettings,
) -> int:
    size = 0
    statement_ms = str(max(1, int(settings.snapshot_seconds * 1000)))
    try:
        # Closed on the way out, so a snapshot cut short gives its connection back at once.
        stream = cast(
            AsyncGenerator[bytes, None],
            export_lines(
                sessionmaker,
                tenant_id=tenant_id,
                local_settings={"statement_timeout": statement_ms},
            ),
        )
        async with aclosing(stream) as lines:
            async for line in lines:
                spool.write(line)
                size += len(line)
    except DBAPIError as exc:
        if is_statement_timeout(exc):
            raise _SnapshotCanceled from exc
        raise
    return size
