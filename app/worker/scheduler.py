"""The in-process scheduler: one system job per kind and time slot, whichever replica is first.

Every replica ticks; the unique (kind, scheduled_for) index lets exactly one INSERT of a slot
succeed, so a slot is enqueued once however many replicas run.
"""

import asyncio
import contextlib
import logging
import math
from datetime import UTC, datetime
from typing import Any

from app.core.config import JobSettings
from app.core.constants import SECONDS_PER_HOUR
from app.core.scope import SYSTEM
from app.models import Job
from app.repositories import jobs as job_rows
from app.services.jobs import JobContext

logger = logging.getLogger(__name__)


def slot_start(now: datetime, interval_hours: float) -> datetime:
    """The start of the slot holding `now`: slots of `interval_hours` counted from the epoch."""
    interval = interval_hours * SECONDS_PER_HOUR
    return datetime.fromtimestamp(math.floor(now.timestamp() / interval) * interval, tz=UTC)


def schedule(settings: JobSettings) -> dict[str, tuple[float, dict[str, Any]]]:
    """Each scheduled kind with its interval in hours and its job parameters."""
    return {
        "decay": (settings.decay_interval_hours, {}),
        "cleanup": (settings.cleanup_interval_hours, {"max_entries": settings.cleanup_max_entries}),
        "consolidation": (settings.consolidation_interval_hours, {}),
        "pii_scrub": (settings.pii_scrub_interval_hours, {}),
    }


async def tick(ctx: JobContext, *, now: datetime | None = None) -> list[Job]:
    """Enqueue the current slot of every kind not enqueued yet; the jobs this call created."""
    now = now or datetime.now(UTC)
    created: list[Job] = []
    for kind, (interval_hours, params) in schedule(ctx.settings.jobs).items():
        async with ctx.transaction(SYSTEM) as session:
            job = await job_rows.enqueue_scheduled(
                session, kind=kind, params=params, scheduled_for=slot_start(now, interval_hours)
            )
        if job is not None:
            logger.info("scheduled %s job %s for %s", kind, job.id, job.scheduled_for)
            created.append(job)
    return created


async def run_scheduler(ctx: JobContext, stop: asyncio.Event) -> None:
    """Tick every `jobs.scheduler_tick_seconds` until `stop` is set."""
    logger.info("job scheduler started")
    while not stop.is_set():
        try:
            await tick(ctx)
        except Exception:  # noqa: BLE001 - the database may be away; try again next tick
            logger.exception("job scheduler tick failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=ctx.settings.jobs.scheduler_tick_seconds)
    logger.info("job scheduler stopped")
