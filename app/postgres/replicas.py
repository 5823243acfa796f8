"""Read replicas: an engine per streaming standby, a watch on each one's health and lag, and
the WAL position of each API key's last write (read-your-writes).

A replica is usable while its last check found it reachable, in recovery or not, with its
replay at most `max_lag_seconds` behind; otherwise it is skipped (a log line when its state
changes, `engram_replica_up` 0, `engram_replica_skipped_total`). A request that finds a
replica dead on first use marks it down at once.
"""

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote

from prometheus_client import Counter, Gauge
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.core.config import ReplicaSettings
from app.core.periodic import Periodic
from app.postgres.db import create_engine, make_sessionmaker, to_async_url

logger = logging.getLogger(__name__)

ReplicaState = Literal["up", "down", "lagging", "unsafe"]

REPLICA_UP = Gauge("engram_replica_up", "1 while a read replica is used for reads.", ["replica"])
REPLICA_LAG = Gauge(
    "engram_replica_lag_seconds",
    "How far a read replica's replay was behind at its last check.",
    ["replica"],
)
REPLICA_SKIPPED = Counter(
    "engram_replica_skipped_total",
    "Reads that could not use a replica, by replica and reason.",
    ["replica", "reason"],
)
READS = Counter(
    "engram_read_transactions_total",
    "Read-only request transactions by the server that served them.",
    ["server"],
)
PRIMARY = "primary"
# No replica has replayed this far: the caller reads from the primary for the window.
UNKNOWN_LSN = 2**64 - 1

# Lag is 0 while the standby has replayed all it received (an idle primary sends nothing, so
# the last replayed transaction's age alone would grow without any lag).
_CHECK = text(
    "SELECT pg_is_in_recovery() AS in_recovery,"
    " CASE WHEN NOT pg_is_in_recovery()"
    "   OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0"
    "  ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)"
    " END::float8 AS lag,"
    " coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn())::text AS lsn,"
    " (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user) AS bypasses"
)
_REPLAYED = text("SELECT coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn())::text")
_PRIMARY_LSN = text("SELECT pg_current_wal_lsn()::text")


def lsn_value(lsn: str) -> int:
    """A WAL position `X/Y` as one comparable number."""
    high, low = lsn.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def replica_name(url: str) -> str:
    """The URL without its password: the replica's name in logs, metrics and /readyz."""
    return unquote(make_url(url).render_as_string(hide_password=True))


@dataclass
class Replica:
    """One standby: its engine, and what its last check found."""

    name: str
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    state: ReplicaState = "down"
    lag_seconds: float | None = None
    replayed_lsn: int = 0
    error: str | None = None
    checked: bool = False

    def set_state(self, state: ReplicaState, reason: str | None = None) -> None:
        """Record a state; log the first and every change."""
        if state != self.state or not self.checked:
            if state == "up":
                logger.info(
                    "read replica %s is up (lag %.3f s)", self.name, self.lag_seconds or 0.0
                )
            else:
                logger.warning("read replica %s skipped: %s", self.name, reason or state)
        self.state, self.error, self.checked = state, reason, True
        REPLICA_UP.labels(self.name).set(1 if state == "up" else 0)


@dataclass
class RecentWrites:
    """The primary's WAL position after each API key's last write, for `window` seconds."""

    window: float
    _by_key: dict[str, tuple[int, float]] = field(default_factory=dict)

    def note(self, key: str, lsn: int) -> None:
        """`key` wrote; its reads need a replica that replayed `lsn`."""
        now = time.monotonic()
        self._by_key[key] = (lsn, now)
        if len(self._by_key) > 10_000:
            self._by_key = {k: v for k, v in self._by_key.items() if now - v[1] < self.window}

    def needed(self, key: str) -> int | None:
        """The WAL position `key`'s reads must see, or None (no write within the window)."""
        entry = self._by_key.get(key)
        if entry is None or time.monotonic() - entry[1] >= self.window:
            return None
        return entry[0]


class ReplicaSet:
    """The read replicas of this process, watched in the background."""

    def __init__(
        self, replicas: list[Replica], settings: ReplicaSettings, primary: AsyncEngine
    ) -> None:
        self.replicas = replicas
        self.settings = settings
        self.writes = RecentWrites(settings.read_your_writes_seconds)
        self._primary = primary
        self._turn = itertools.count()
        self._watching = Periodic("engram-replica-watch", settings.check_seconds, self.check_all)

    @property
    def configured(self) -> bool:
        """True when any replica URL was given."""
        return bool(self.replicas)

    def pick(self) -> Replica | None:
        """The next usable replica (round robin), or None: read from the primary."""
        usable = [r for r in self.replicas if r.state == "up"]
        for replica in self.replicas:
            if replica.state != "up":
                REPLICA_SKIPPED.labels(replica.name, replica.state).inc()
        if not usable:
            return None
        return usable[next(self._turn) % len(usable)]

    async def has_replayed(self, replica: Replica, session: AsyncSession, lsn: int) -> bool:
        """True when `replica` has replayed up to `lsn` (asked in `session`'s transaction
        unless its last check already saw it)."""
        if replica.replayed_lsn >= lsn:
            return True
        replica.replayed_lsn = max(
            replica.replayed_lsn, lsn_value((await session.execute(_REPLAYED)).scalar_one())
        )
        return replica.replayed_lsn >= lsn

    def mark_down(self, replica: Replica, error: BaseException) -> None:
        """A request could not use `replica`: skip it until a check finds it well again."""
        replica.set_state("down", f"{type(error).__name__}: {error}".strip())

    async def note_write(self, key: str) -> None:
        """Remember the primary's WAL position after `key`'s committed write."""
        if not self.configured or self.writes.window == 0:
            return
        try:
            async with self._primary.connect() as conn:
                lsn = lsn_value((await conn.execute(_PRIMARY_LSN)).scalar_one())
        except Exception:  # noqa: BLE001 - the write is committed; read it on the primary
            logger.warning("could not read the primary's WAL position after a write", exc_info=True)
            lsn = UNKNOWN_LSN
        self.writes.note(key, lsn)

    async def check(self, replica: Replica) -> None:
        """Ask one replica for its recovery state, lag and role; set its state."""
        try:
            async with asyncio.timeout(self.settings.connect_timeout_seconds * 2):
                async with replica.engine.connect() as conn:
                    row = (await conn.execute(_CHECK)).one()
        except Exception as error:  # noqa: BLE001 - any failure makes the replica unusable
            replica.lag_seconds = None
            REPLICA_LAG.labels(replica.name).set(float("nan"))
            replica.set_state("down", f"{type(error).__name__}: {error}".strip())
            return
        replica.lag_seconds = float(row.lag)
        replica.replayed_lsn = max(replica.replayed_lsn, lsn_value(row.lsn))
        REPLICA_LAG.labels(replica.name).set(replica.lag_seconds)
        if row.bypasses:
            replica.set_state(
                "unsafe", "its role is a superuser or BYPASSRLS: row-level security would not apply"
            )
        elif replica.lag_seconds > self.settings.max_lag_seconds:
            replica.set_state(
                "lagging",
                f"replay {replica.lag_seconds:.1f} s behind "
                f"(bound {self.settings.max_lag_seconds:g} s)",
            )
        else:
            replica.set_state("up")

    async def check_all(self) -> None:
        """Check every replica side by side."""
        await asyncio.gather(*(self.check(replica) for replica in self.replicas))

    async def start(self) -> None:
        """Check every replica once, then keep checking in the background."""
        if not self.configured:
            return
        await self.check_all()
        self._watching.start()

    async def stop(self) -> None:
        """Stop watching and close every replica's connections."""
        await self._watching.stop()
        for replica in self.replicas:
            await replica.engine.dispose()

    def status(self) -> list[dict[str, object]]:
        """Each replica's name, state, lag and last error (for /readyz)."""
        return [
            {"name": r.name, "state": r.state, "lag_seconds": r.lag_seconds, "error": r.error}
            for r in self.replicas
        ]


def build_replicas(
    urls: list[str],
    settings: ReplicaSettings,
    *,
    primary: AsyncEngine,
    role: str | None,
    pool_size: int,
    max_overflow: int | None,
    statement_cache_size: int,
) -> ReplicaSet:
    """An engine per replica URL, run as `role` like the primary's request connections."""
    replicas = []
    for url in urls:
        engine = create_engine(
            to_async_url(url),
            pool_size=pool_size,
            max_overflow=max_overflow,
            role=role,
            statement_cache_size=statement_cache_size,
            connect_timeout=settings.connect_timeout_seconds,
        )
        replicas.append(Replica(replica_name(url), engine, make_sessionmaker(engine)))
    return ReplicaSet(replicas, settings, primary)
