"""The jobs API and the worker: 202 + job resource, tenant bounds, claiming, leases."""

import asyncio
import os
import socket
import uuid
from datetime import datetime

import pytest

from app.worker import worker
from tests.support.jobs import job_context, run_job


async def _system_or_other_job(sql, *, tenant_id, kind="decay", status="queued", **columns):
    sets = "".join(f", {name}" for name in columns)
    values = "".join(f", {value}" for value in columns.values())
    rows = await sql(
        f"INSERT INTO jobs (tenant_id, kind, status{sets}) "
        f"VALUES (:tenant_id, :kind, :status{values}) RETURNING id::text AS id",
        tenant_id=tenant_id,
        kind=kind,
        status=status,
    )
    return rows[0]["id"]


@pytest.mark.parametrize("kind", ["consolidation", "decay", "cleanup"])
async def test_queueing_a_job_answers_202_with_the_job(client, kind):
    response = await client.post(f"/v1/jobs/{kind}")
    assert response.status_code == 202
    job = response.json()
    assert response.headers["location"] == f"/v1/jobs/{job['id']}"
    assert (job["kind"], job["status"], job["attempts"], job["errors"], job["result"]) == (
        kind,
        "queued",
        0,
        [],
        None,
    )
    assert job["started_at"] is job["finished_at"] is job["duration_seconds"] is None
    assert (await client.get(f"/v1/jobs/{job['id']}")).json() == job


async def test_finished_job_shows_timings_and_attempts(client, app, settings):
    job = await run_job(client, job_context(app, settings), "decay")
    assert (job["status"], job["attempts"]) == ("succeeded", 1)
    created, started, finished = (
        datetime.fromisoformat(job[k]) for k in ("created_at", "started_at", "finished_at")
    )
    assert created <= started <= finished
    assert job["duration_seconds"] == pytest.approx((finished - started).total_seconds())


async def test_unknown_job_is_a_404_problem(client):
    response = await client.get(f"/v1/jobs/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_another_tenants_job_is_not_found(client, sql):
    other = await _system_or_other_job(sql, tenant_id="other")
    assert (await client.get(f"/v1/jobs/{other}")).status_code == 404


async def test_listing_shows_only_the_tenants_jobs_newest_first(client, sql):
    await _system_or_other_job(sql, tenant_id="other")
    await _system_or_other_job(sql, tenant_id=None)  # a scheduler (system) job
    first = (await client.post("/v1/jobs/decay")).json()
    second = (await client.post("/v1/jobs/cleanup")).json()
    page = (await client.get("/v1/jobs")).json()
    assert [job["id"] for job in page["items"]] == [second["id"], first["id"]]
    assert page["next_cursor"] is None


async def test_listing_filters_by_kind_and_status(client, app, settings):
    await run_job(client, job_context(app, settings), "decay")
    queued = (await client.post("/v1/jobs/decay")).json()
    await client.post("/v1/jobs/cleanup")
    page = (await client.get("/v1/jobs", params={"kind": "decay", "status": "queued"})).json()
    assert [job["id"] for job in page["items"]] == [queued["id"]]


async def test_listing_pages_with_a_cursor(client):
    ids = [(await client.post("/v1/jobs/decay")).json()["id"] for _ in range(3)]
    first = (await client.get("/v1/jobs", params={"limit": 2})).json()
    second = (
        await client.get("/v1/jobs", params={"limit": 2, "cursor": first["next_cursor"]})
    ).json()
    assert [j["id"] for j in first["items"] + second["items"]] == ids[::-1]
    assert second["next_cursor"] is None


@pytest.mark.parametrize(
    "params", [{"kind": "compaction"}, {"status": "done"}, {"limit": 0}, {"cursor": "garbage"}]
)
async def test_invalid_listing_parameters_are_a_422(client, params):
    assert (await client.get("/v1/jobs", params=params)).status_code == 422


async def test_two_workers_never_claim_the_same_job(client, app, settings):
    job = (await client.post("/v1/jobs/decay")).json()
    first, second = job_context(app, settings), job_context(app, settings)
    claimed = await asyncio.gather(worker.claim(first), worker.claim(second))
    assert sorted(str(c.id) if c else "" for c in claimed) == ["", job["id"]]


async def test_jobs_are_claimed_oldest_first(client, app, settings):
    first = (await client.post("/v1/jobs/decay")).json()
    await client.post("/v1/jobs/decay")
    claimed = await worker.claim(job_context(app, settings))
    assert str(claimed.id) == first["id"]


async def test_a_job_whose_lease_expired_is_claimed_again(client, app, sql, settings):
    job = (await client.post("/v1/jobs/decay")).json()
    await sql(
        "UPDATE jobs SET status = 'running', attempts = 1, worker_id = 'dead', "
        "lease_expires_at = now() - interval '1 second'"
    )
    await worker.drain(job_context(app, settings))
    finished = (await client.get(f"/v1/jobs/{job['id']}")).json()
    assert (finished["status"], finished["attempts"]) == ("succeeded", 2)


async def test_a_running_job_with_a_live_lease_is_left_alone(client, app, sql, settings):
    await client.post("/v1/jobs/decay")
    await sql(
        "UPDATE jobs SET status = 'running', attempts = 1, worker_id = 'alive', "
        "lease_expires_at = now() + interval '1 minute'"
    )
    assert await worker.run_once(job_context(app, settings)) is None


async def test_an_abandoned_job_fails_after_its_last_attempt(client, app, sql, settings):
    job = (await client.post("/v1/jobs/decay")).json()
    await sql(
        "UPDATE jobs SET status = 'running', attempts = 2, worker_id = 'dead', "
        "lease_expires_at = now() - interval '1 second'"
    )
    assert await worker.run_once(job_context(app, settings, max_job_attempts=2)) is None
    failed = (await client.get(f"/v1/jobs/{job['id']}")).json()
    assert failed["status"] == "failed"
    assert failed["errors"] == ["abandoned: the worker stopped after 2 attempt(s)"]


async def test_a_crashing_job_is_recorded_as_failed(client, app, sql, settings):
    job_id = await _system_or_other_job(
        sql, tenant_id="default", kind="cleanup", params='\'{"max_entries": "lots"}\'::jsonb'
    )
    await worker.drain(job_context(app, settings))
    job = (await client.get(f"/v1/jobs/{job_id}")).json()
    assert job["status"] == "failed"
    assert job["errors"] == ["ValueError: invalid literal for int() with base 10: 'lots'"]


def test_a_long_error_list_is_cut_to_100_with_a_count():
    errors = [f"error {i}" for i in range(130)]
    assert worker.bounded_errors(errors) == [*errors[:100], "... and 30 more error(s)"]


async def _running_job_of(client, sql, worker_id, *, hostname, pid, silent_seconds=0):
    job = (await client.post("/v1/jobs/decay")).json()
    await sql(
        "INSERT INTO workers (id, hostname, pid, heartbeat_at) "
        "VALUES (:w, :h, :p, now() - make_interval(secs => :s))",
        w=worker_id,
        h=hostname,
        p=pid,
        s=silent_seconds,
    )
    await sql(
        "UPDATE jobs SET status = 'running', attempts = 1, worker_id = :w, "
        "lease_expires_at = now() + interval '5 minutes'",
        w=worker_id,
    )
    return job


async def test_restarted_process_reclaims_its_dead_predecessors_job_at_once(
    client, app, sql, settings
):
    """The previous incarnation ran on this host; its pid is gone (or is now ours)."""
    job = await _running_job_of(
        client, sql, "worker-before-crash", hostname=socket.gethostname(), pid=os.getpid()
    )
    ctx = job_context(app, settings)
    assert await worker.start_up(ctx) == 1
    await worker.drain(ctx)
    finished = (await client.get(f"/v1/jobs/{job['id']}")).json()
    assert (finished["status"], finished["attempts"]) == ("succeeded", 2)
    assert [row["id"] for row in await sql("SELECT id FROM workers")] == [ctx.worker_id]


async def test_worker_with_a_stale_heartbeat_elsewhere_is_reclaimed(client, app, sql, settings):
    job = await _running_job_of(
        client, sql, "worker-far-away", hostname="other-host", pid=1, silent_seconds=300
    )
    ctx = job_context(app, settings)
    assert await worker.start_up(ctx) == 1
    await worker.drain(ctx)
    assert (await client.get(f"/v1/jobs/{job['id']}")).json()["status"] == "succeeded"


async def test_live_worker_on_another_host_keeps_its_job(client, app, sql, settings):
    await _running_job_of(client, sql, "worker-alive", hostname="other-host", pid=1)
    ctx = job_context(app, settings)
    assert await worker.start_up(ctx) == 0
    assert await worker.run_once(ctx) is None
