"""Readiness: which of the service's dependencies are usable."""

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from app.postgres import migrations
from app.repositories import health as health_rows


@dataclass(frozen=True)
class DatabaseState:
    """Whether the database answers and whether its schema is at the newest migration."""

    reachable: bool
    at_head: bool


async def database_state(engine: AsyncEngine) -> DatabaseState:
    """Probe the database; any failure counts as unreachable."""
    try:
        await health_rows.ping(engine)
    except Exception:  # noqa: BLE001 - any failure means not ready
        return DatabaseState(reachable=False, at_head=False)
    try:
        return DatabaseState(reachable=True, at_head=await migrations.is_at_head(engine))
    except Exception:  # noqa: BLE001 - any failure means not ready
        return DatabaseState(reachable=True, at_head=False)
