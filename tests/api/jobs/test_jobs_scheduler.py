"""The scheduler (one job per kind and slot across replicas) and the app's background tasks."""

import asyncio
from datetime import UTC, datetime, timedelta

import httpx

from app.core.config import JobSettings
from app.main import create_app
from app.worker import scheduler
from app.worker.llm import backoff_delay
from tests.support.jobs import job_context

NOON = datetime(2026, 11, 21, 13, 37, tzinfo=UTC)


def test_slot_start_floors_to_the_interval():
    assert scheduler.slot_start(NOON, 24) == datetime(2026, 11, 21, tzinfo=UTC)
    assert scheduler.slot_start(NOON, 6) == datetime(2026, 11, 21, 12, tzinfo=UTC)
    assert scheduler.slot_start(NOON, 0.5) == datetime(2026, 11, 21, 13, 30, tzinfo=UTC)


def test_backoff_doubles_from_the_base():
    assert [backoff_delay(1.5, attempt) for attempt in (1, 2, 3)] == [1.5, 3.0, 6.0]


async def _scheduled(sql):
    rows = await sql(
        "SELECT kind, scheduled_for, tenant_id, params FROM jobs ORDER BY kind, scheduled_for"
    )
    return [(r["kind"], r["scheduled_for"], r["tenant_id"], r["params"]) for r in rows]


async def test_replicas_ticking_together_enqueue_each_slot_once(client, app, sql, settings):
    replicas = [job_context(app, settings, cleanup_max_entries=500) for _ in range(4)]
    created = await asyncio.gather(*(scheduler.tick(r, now=NOON) for r in replicas))
    assert sum(len(jobs) for jobs in created) == 4
    assert await _scheduled(sql) == [
        ("cleanup", datetime(2026, 11, 21, tzinfo=UTC), None, {"max_entries": 500}),
        ("consolidation", datetime(2026, 11, 21, 12, tzinfo=UTC), None, {}),
        ("decay", datetime(2026, 11, 21, tzinfo=UTC), None, {}),
        ("pii_scrub", datetime(2026, 11, 21, tzinfo=UTC), None, {}),
    ]


async def test_next_slot_of_each_interval_is_enqueued_once_due(client, app, sql, settings):
    ctx = job_context(app, settings)
    await scheduler.tick(ctx, now=NOON)
    assert await scheduler.tick(ctx, now=NOON + timedelta(hours=1)) == []
    later = await scheduler.tick(ctx, now=NOON + timedelta(hours=5))
    assert [(job.kind, job.scheduled_for) for job in later] == [
        ("consolidation", datetime(2026, 11, 21, 18, tzinfo=UTC))
    ]


async def test_intervals_come_from_settings(client, app, sql, settings):
    ctx = job_context(
        app,
        settings,
        decay_interval_hours=1,
        cleanup_interval_hours=2,
        consolidation_interval_hours=3,
        pii_scrub_interval_hours=0.25,
    )
    await scheduler.tick(ctx, now=NOON)
    assert [(kind, slot.hour, slot.minute) for kind, slot, _, _ in await _scheduled(sql)] == [
        ("cleanup", 12, 0),
        ("consolidation", 12, 0),
        ("decay", 13, 0),
        ("pii_scrub", 13, 30),
    ]


async def test_scheduled_jobs_are_not_listed_to_tenants(client, app, settings):
    await scheduler.tick(job_context(app, settings), now=NOON)
    assert (await client.get("/v1/jobs")).json()["items"] == []


async def test_app_with_worker_enabled_runs_queued_jobs(client, settings):
    worker_settings = settings.model_copy(
        update={
            "jobs": JobSettings(
                worker_enabled=True, scheduler_enabled=False, poll_interval_seconds=0.05
            )
        }
    )
    background_app = create_app(worker_settings)
    async with background_app.router.lifespan_context(background_app):
        transport = httpx.ASGITransport(app=background_app)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://bg.test",
            headers={"Authorization": client.headers["Authorization"]},
        ) as http:
            job = (await http.post("/v1/jobs/decay")).json()
            status = await _wait_for_status(http, job["id"], {"succeeded", "failed"})
    assert status == "succeeded"


async def test_app_with_scheduler_enabled_enqueues_on_start(client, sql, settings):
    scheduler_settings = settings.model_copy(
        update={
            "jobs": JobSettings(
                worker_enabled=False, scheduler_enabled=True, scheduler_tick_seconds=3600
            )
        }
    )
    background_app = create_app(scheduler_settings)
    async with background_app.router.lifespan_context(background_app):
        for _ in range(200):
            if len(await _scheduled(sql)) == 4:
                break
            await asyncio.sleep(0.02)
    assert sorted(kind for kind, *_ in await _scheduled(sql)) == [
        "cleanup",
        "consolidation",
        "decay",
        "pii_scrub",
    ]


async def _wait_for_status(http, job_id, wanted, attempts=400):
    """Poll the job until its status is in `wanted` (the worker runs in the background)."""
    status = None
    for _ in range(attempts):
        status = (await http.get(f"/v1/jobs/{job_id}")).json()["status"]
        if status in wanted:
            break
        await asyncio.sleep(0.025)
    return status
