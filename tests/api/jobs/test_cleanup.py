"""Episode cleanup: TTL expiry, capacity on consolidated episodes only, bounded batches."""

from datetime import UTC, datetime, timedelta

import pytest

from app.core.config import RunSettings
from app.worker import worker
from tests.support.http import post
from tests.support.jobs import add_episodes, job_context, run_job


async def _cleanup(client, app, settings, body=None, **jobs):
    return await run_job(client, job_context(app, settings, **jobs), "cleanup", body)


async def _arrange(sql, *rows):
    """Insert episodes given as (label, consolidated, created_days_ago, expired)."""
    for label, consolidated, days_ago, expired in rows:
        await sql(
            "INSERT INTO episodes (tenant_id, butler, content, consolidated, "
            "consolidation_status, created_at, expires_at) VALUES ('default', 'assistant', "
            ":label, :consolidated, "
            "CASE WHEN :consolidated THEN 'consolidated' ELSE 'pending' END, "
            "now() - make_interval(days => :days), "
            "CASE WHEN :expired THEN now() - interval '1 hour' "
            "ELSE now() + interval '7 days' END)",
            label=label,
            consolidated=consolidated,
            days=days_ago,
            expired=expired,
        )


async def _contents(sql):
    rows = await sql("SELECT content FROM episodes ORDER BY content")
    return [row["content"] for row in rows]


async def test_expired_consolidated_episodes_are_deleted(client, app, sql, settings):
    await _arrange(sql, ("old", True, 8, True), ("fresh", False, 1, False))
    job = await _cleanup(client, app, settings)
    assert job["status"] == "succeeded"
    assert (
        job["result"]["expired_deleted"],
        job["result"]["capacity_deleted"],
        job["result"]["remaining"],
    ) == (1, 0, 1)
    assert await _contents(sql) == ["fresh"]


async def test_expired_unconsolidated_episode_is_kept_and_counted(client, app, sql, settings):
    await _arrange(sql, ("never-consolidated", False, 8, True), ("done", True, 8, True))
    job = await _cleanup(client, app, settings)
    assert (
        job["result"]["expired_deleted"],
        job["result"]["expired_kept_unconsolidated"],
        job["result"]["remaining"],
    ) == (1, 1, 1)
    assert await _contents(sql) == ["never-consolidated"]


async def test_forgotten_episode_is_deleted_by_cleanup(client, app, sql, settings):
    [gone, kept] = await add_episodes(client, "assistant", "forget me", "keep me")
    await client.post(f"/v1/episodes/{gone}/forget")
    await sql(
        "UPDATE episodes SET expires_at = now() - interval '1 second' WHERE id = CAST(:id AS uuid)",
        id=gone,
    )
    job = await _cleanup(client, app, settings)
    assert job["result"]["expired_deleted"] == 1
    assert (await client.get(f"/v1/episodes/{gone}")).status_code == 404
    assert (await client.get(f"/v1/episodes/{kept}")).status_code == 200


async def test_capacity_deletes_the_oldest_consolidated_episodes(client, app, sql, settings):
    await _arrange(
        sql,
        ("c-oldest", True, 5, False),
        ("c-older", True, 4, False),
        ("c-newest", True, 1, False),
        ("p-old", False, 6, False),
        ("p-new", False, 0, False),
    )
    job = await _cleanup(client, app, settings, {"max_entries": 3})
    assert (job["result"]["capacity_deleted"], job["result"]["remaining"]) == (2, 3)
    assert await _contents(sql) == ["c-newest", "p-new", "p-old"]


async def test_capacity_never_deletes_unconsolidated_episodes(client, app, sql, settings):
    await _arrange(
        sql,
        ("p1", False, 9, False),
        ("p2", False, 8, False),
        ("p3", False, 7, False),
        ("c1", True, 1, False),
    )
    job = await _cleanup(client, app, settings, {"max_entries": 1})
    assert (
        job["result"]["expired_deleted"],
        job["result"]["capacity_deleted"],
        job["result"]["remaining"],
    ) == (0, 1, 3)
    assert await _contents(sql) == ["p1", "p2", "p3"]


async def test_expired_count_is_taken_before_capacity(client, app, sql, settings):
    await _arrange(sql, ("expired", True, 9, True), ("c1", True, 5, False), ("c2", True, 4, False))
    job = await _cleanup(client, app, settings, {"max_entries": 2})
    assert (
        job["result"]["expired_deleted"],
        job["result"]["capacity_deleted"],
        job["result"]["remaining"],
    ) == (1, 0, 2)


async def test_deletion_runs_in_bounded_batches(client, app, sql, settings):
    await _arrange(sql, *[(f"e{i}", True, 9, True) for i in range(5)])
    job = await _cleanup(client, app, settings, cleanup_batch_size=2)
    assert job["result"]["expired_deleted"] == 5
    rows = await sql(
        "SELECT (payload->>'count')::int AS n FROM memory_events "
        "WHERE event_type = 'episodes_deleted' ORDER BY created_at, n DESC"
    )
    assert [row["n"] for row in rows] == [2, 2, 1]  # one transaction per batch


async def test_links_to_deleted_episodes_are_removed(client, app, sql, settings):
    [episode_id] = await add_episodes(client, "assistant", "source")
    fact = (
        await client.post(
            "/v1/facts",
            json={
                "subject": "u",
                "predicate": "p",
                "content": "c",
                "source_episode_id": episode_id,
            },
        )
    ).json()
    await sql(
        "INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, "
        "target_id, relation) VALUES ('default', 'fact', CAST(:f AS uuid), 'episode', "
        "CAST(:e AS uuid), "
        "'derived_from')",
        f=fact["id"],
        e=episode_id,
    )
    await sql(
        "UPDATE episodes SET expires_at = now() - interval '1 hour', consolidated = true, "
        "consolidation_status = 'consolidated'"
    )
    job = await _cleanup(client, app, settings)
    assert job["result"]["links_deleted"] == 1
    assert (await sql("SELECT count(*) AS n FROM memory_links"))[0]["n"] == 0
    kept = (await client.get(f"/v1/facts/{fact['id']}")).json()
    assert kept["source_episode_id"] is None


async def test_cleanup_is_bounded_to_the_callers_tenant(client, app, sql, settings):
    await sql(
        "INSERT INTO episodes (tenant_id, butler, content, consolidated, expires_at) "
        "VALUES ('other', 'b', 'theirs-expired', false, now() - interval '1 hour'), "
        "('other', 'b', 'theirs-consolidated', true, now() + interval '1 day')"
    )
    await _arrange(sql, ("mine", True, 1, False))
    job = await _cleanup(client, app, settings, {"max_entries": 0})
    assert job["result"] == {
        "expired_deleted": 0,
        "expired_kept_unconsolidated": 0,
        "unconsolidated_deleted": 0,
        "capacity_deleted": 1,
        "capacity_unconsolidated_deleted": 0,
        "remaining": 0,
        "links_deleted": 0,
        "max_entries": 0,
        "working_memories_deleted": 0,
        "runs_deleted": 0,
        "run_messages_deleted": 0,
        "run_feedback_deleted": 0,
        "run_retention_days": 365.0,
    }
    assert await _contents(sql) == ["theirs-consolidated", "theirs-expired"]


async def test_default_max_entries_is_10000(client):
    response = await client.post("/v1/jobs/cleanup")
    assert response.status_code == 202
    assert response.json()["params"] == {"max_entries": 10_000}


@pytest.mark.parametrize(
    "body",
    [
        {"max_entries": -1},
        {"max_entries": "many"},
        {"max_entries": 10_000_001},
        {"max_entries": 5, "extra": 1},
    ],
)
async def test_invalid_cleanup_body_is_a_422(client, body):
    response = await client.post("/v1/jobs/cleanup", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


async def test_forgotten_unconsolidated_episode_is_deleted_even_before_its_ttl(
    client, app, sql, settings
):
    [gone] = await add_episodes(client, "assistant", "forget me")
    assert (await client.post(f"/v1/episodes/{gone}/forget")).status_code == 200
    await sql("UPDATE episodes SET expires_at = now() - interval '1 second'")
    job = await _cleanup(client, app, settings)
    assert (job["result"]["expired_deleted"], job["result"]["remaining"]) == (1, 0)


async def test_a_rerun_cleanup_reports_every_attempts_deletions(client, app, sql, settings):
    """The first attempt deleted 3 episodes and died; the second deletes 2 and reports 5."""
    await _arrange(sql, ("e1", True, 9, True), ("e2", True, 9, True))
    job = (await client.post("/v1/jobs/cleanup")).json()
    await sql(
        "UPDATE jobs SET status = 'running', attempts = 1, worker_id = 'dead', "
        "lease_expires_at = now() - interval '1 second', "
        'progress = \'{"expired_deleted": 3, "links_deleted": 1}\''
    )
    await worker.drain(job_context(app, settings))
    finished = (await client.get(f"/v1/jobs/{job['id']}")).json()
    assert (
        finished["attempts"],
        finished["result"]["expired_deleted"],
        finished["result"]["links_deleted"],
    ) == (2, 5, 1)


async def test_cleanup_progress_is_committed_batch_by_batch(client, app, sql, settings):
    await _arrange(sql, *[(f"e{i}", True, 9, True) for i in range(5)])
    job = await _cleanup(client, app, settings, cleanup_batch_size=2)
    [row] = await sql("SELECT progress FROM jobs WHERE id = CAST(:id AS uuid)", id=job["id"])
    assert row["progress"]["expired_deleted"] == job["result"]["expired_deleted"] == 5


async def _unconsolidated(client, sql, content, *, expired_days_ago):
    [episode_id] = await add_episodes(client, "assistant", content)
    await sql(
        "UPDATE episodes SET expires_at = now() - make_interval(days => :days) "
        "WHERE id = CAST(:id AS uuid)",
        days=expired_days_ago,
        id=episode_id,
    )
    return episode_id


async def test_an_unconsolidated_episode_goes_once_its_grace_after_expiry_has_passed(
    client, app, sql, settings
):
    assert settings.unconsolidated_grace_days == 30
    gone = await _unconsolidated(client, sql, "expired long ago", expired_days_ago=31)
    kept = await _unconsolidated(client, sql, "expired lately", expired_days_ago=29)

    job = await _cleanup(client, app, settings)

    assert (
        job["result"]["unconsolidated_deleted"],
        job["result"]["expired_kept_unconsolidated"],
        job["result"]["remaining"],
    ) == (1, 1, 1)
    assert (await client.get(f"/v1/episodes/{gone}")).status_code == 404
    assert (await client.get(f"/v1/episodes/{kept}")).status_code == 200
    [event] = (await client.get("/v1/events", params={"event_type": "episodes_deleted"})).json()[
        "items"
    ]
    assert (event["payload"]["reason"], event["payload"]["unconsolidated_episode_ids"]) == (
        "unconsolidated_grace",
        [gone],
    )


async def test_over_capacity_expired_unconsolidated_episodes_go_after_consolidated_ones(
    client, app, sql, settings
):
    await _arrange(sql, ("consolidated", True, 1, False), ("fresh", False, 0, False))
    older = await _unconsolidated(client, sql, "expired first", expired_days_ago=2)
    await _unconsolidated(client, sql, "expired next", expired_days_ago=1)
    await sql(
        "UPDATE episodes SET created_at = now() - interval '9 days' WHERE id = CAST(:id AS uuid)",
        id=older,
    )

    job = await _cleanup(client, app, settings, {"max_entries": 2})

    assert (
        job["result"]["capacity_deleted"],
        job["result"]["capacity_unconsolidated_deleted"],
        job["result"]["remaining"],
    ) == (2, 1, 2)
    assert await _contents(sql) == ["expired next", "fresh"]
    events = (await client.get("/v1/events", params={"event_type": "episodes_deleted"})).json()[
        "items"
    ]
    assert {e["payload"]["reason"]: e["payload"]["unconsolidated_episode_ids"] for e in events} == {
        "capacity": [],
        "capacity_unconsolidated": [older],
    }


async def _run(client, days_ago: float | None, **fields):
    """A run started 4000 days ago, finished `days_ago` days ago (None: unfinished), with a
    message and feedback."""
    now = datetime.now(UTC)
    started = now - timedelta(days=4000)
    finished = None if days_ago is None else (now - timedelta(days=days_ago)).isoformat()
    run = await post(
        client,
        "/v1/runs",
        task_id="nightly-report",
        started_at=started.isoformat(),
        finished_at=finished,
        **fields,
    )
    await post(client, f"/v1/runs/{run['id']}/messages", role="executor", content="Done")
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.1,
        rationale="Late again",
    )
    return run


async def test_cleanup_deletes_runs_finished_longer_ago_than_the_retention(
    client, app, sql, settings
):
    old = await _run(client, 40, success=False)
    recent = await _run(client, 10)
    unfinished = await _run(client, None)
    lesson = (await client.post("/v1/runs/lessons", json={})).json()["rule_ids"]
    ctx = job_context(app, settings, cleanup_batch_size=1)
    ctx = type(ctx)(
        ctx.sessionmaker,
        ctx.settings.model_copy(update={"runs": RunSettings(retention_days=30)}),
        ctx.embedder,
    )

    job = await run_job(client, ctx, "cleanup")

    assert job["status"] == "succeeded", job
    assert {
        name: job["result"][name]
        for name in (
            "runs_deleted",
            "run_messages_deleted",
            "run_feedback_deleted",
            "run_retention_days",
        )
    } == {
        "runs_deleted": 1,
        "run_messages_deleted": 1,
        "run_feedback_deleted": 1,
        "run_retention_days": 30,
    }
    assert (await client.get(f"/v1/runs/{old['id']}")).status_code == 404
    for kept in (recent, unfinished):
        assert (await client.get(f"/v1/runs/{kept['id']}")).status_code == 200
    assert await sql("SELECT id FROM run_messages WHERE run_id = :r", r=old["id"]) == []
    # The lesson learned from the old run stays a rule, without its link to the run.
    [rule_id] = lesson
    links = (
        await client.get("/v1/links", params={"memory_type": "rule", "memory_id": rule_id})
    ).json()["items"]
    assert [link for link in links if link["target_type"].startswith("run")] == []
    [event] = await sql("SELECT payload FROM memory_events WHERE event_type = 'runs_deleted'")
    assert event["payload"]["run_ids"] == [old["id"]]


async def test_a_run_retention_of_0_keeps_every_run(client, app, settings):
    old = await _run(client, 3000)
    ctx = job_context(app, settings)
    ctx = type(ctx)(
        ctx.sessionmaker,
        ctx.settings.model_copy(update={"runs": RunSettings(retention_days=0)}),
        ctx.embedder,
    )
    job = await run_job(client, ctx, "cleanup")
    assert (job["result"]["runs_deleted"], job["result"]["run_retention_days"]) == (0, 0)
    assert (await client.get(f"/v1/runs/{old['id']}")).status_code == 200


async def test_the_default_run_retention_is_a_year(client, app, settings):
    year_old = await _run(client, 366)
    younger = await _run(client, 300)
    job = await run_job(client, job_context(app, settings), "cleanup")
    assert job["result"]["runs_deleted"] == 1
    assert (await client.get(f"/v1/runs/{year_old['id']}")).status_code == 404
    assert (await client.get(f"/v1/runs/{younger['id']}")).status_code == 200
