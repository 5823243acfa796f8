"""Task runs through HTTP: records, messages, feedback, search, lessons, PII."""

from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import SecretStr

from app.core.config import RunSettings
from app.worker import worker
from tests.support.factories import create_run
from tests.support.http import post
from tests.support.jobs import job_context

UNKNOWN = "00000000-0000-4000-8000-000000000000"


def problem_fields(response: Any) -> set[str]:
    assert response.headers["content-type"].startswith("application/problem+json")
    return {error["field"] for error in response.json().get("errors") or []}


async def test_create_and_get_a_run_with_messages_and_feedback(client):
    run = await create_run(
        client, summary="Parse the CSV invoice", agent_version="a1", meta={"ticket": 7}
    )
    assert (run["task_id"], run["agent_version"], run["success"], run["meta"]) == (
        "t-parse",
        "a1",
        None,
        {"ticket": 7},
    )
    first = await post(
        client, f"/v1/runs/{run['id']}/messages", role="planner", content="Split the file into rows"
    )
    batch = await client.post(
        f"/v1/runs/{run['id']}/messages/batch",
        json={
            "items": [
                {"role": "executor", "content": "Parsed 12 rows", "token_count": 3},
                {"role": "critic", "content": "Totals do not add up"},
            ]
        },
    )
    assert batch.status_code == 201, batch.text
    feedback = await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.2,
        rationale="Check the totals column before answering",
    )

    detail = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert [(m["role"], m["content"]) for m in detail["messages"]] == [
        ("planner", "Split the file into rows"),
        ("executor", "Parsed 12 rows"),
        ("critic", "Totals do not add up"),
    ]
    assert [m["id"] for m in detail["messages"]][0] == first["id"]
    assert detail["messages"][1]["token_count"] == 3
    assert detail["feedback"] == [feedback]
    assert feedback["rating"] == 0.2 and feedback["source"] == "critic"


async def test_token_count_is_estimated_when_not_given(client):
    run = await create_run(client)
    message = await post(client, f"/v1/runs/{run['id']}/messages", role="human", content="x" * 41)
    assert message["token_count"] == 11


async def test_finishing_a_run_sets_its_outcome(client):
    run = await create_run(client, started_at="2026-11-22T09:00:00+00:00")
    response = await client.patch(
        f"/v1/runs/{run['id']}",
        json={"success": False, "score_numeric": 0.25, "finished_at": "2026-11-22T10:00:00+00:00"},
    )
    assert response.status_code == 200, response.text
    assert (response.json()["success"], response.json()["score_numeric"]) == (False, 0.25)
    assert response.json()["finished_at"].startswith("2026-11-22T10:00:00")


async def test_an_outcome_finishes_an_unfinished_run_now(client):
    run = await create_run(client)
    assert run["finished_at"] is None
    before = datetime.now(UTC)
    failed = await client.patch(f"/v1/runs/{run['id']}", json={"success": False})
    assert failed.status_code == 200, failed.text
    finished_at = datetime.fromisoformat(failed.json()["finished_at"])
    assert before - timedelta(seconds=1) <= finished_at <= datetime.now(UTC)
    again = await client.patch(f"/v1/runs/{run['id']}", json={"success": True})
    assert again.json()["finished_at"] == failed.json()["finished_at"]
    scored = await create_run(client)
    only_score = await client.patch(f"/v1/runs/{scored['id']}", json={"score_numeric": 0.5})
    assert only_score.json()["finished_at"] is None


async def test_a_run_created_with_its_outcome_is_finished(client):
    before = datetime.now(UTC)
    for success in (True, False):
        run = await create_run(client, success=success)
        finished_at = datetime.fromisoformat(run["finished_at"])
        assert before - timedelta(seconds=1) <= finished_at <= datetime.now(UTC)
        assert (await client.get(f"/v1/runs/{run['id']}")).json()["finished_at"] == (
            run["finished_at"]
        )
    timed = await create_run(
        client,
        success=True,
        started_at="2026-11-20T09:00:00+00:00",
        finished_at="2026-11-20T10:00:00+00:00",
    )
    assert timed["finished_at"].startswith("2026-11-20T10:00:00")
    assert (await create_run(client))["finished_at"] is None


async def test_listing_runs_pages_and_filters(client):
    for number in range(3):
        await create_run(client, task_id=f"task-{number % 2}", success=number != 1)
    page = (await client.get("/v1/runs", params={"limit": 2})).json()
    assert len(page["items"]) == 2 and page["next_cursor"]
    rest = (await client.get("/v1/runs", params={"limit": 2, "cursor": page["next_cursor"]})).json()
    assert len(rest["items"]) == 1 and rest["next_cursor"] is None
    failed = (await client.get("/v1/runs", params={"success": "false"})).json()["items"]
    assert [run["task_id"] for run in failed] == ["task-1"]


async def test_unknown_role_is_a_422_naming_role(client):
    run = await create_run(client)
    response = await client.post(
        f"/v1/runs/{run['id']}/messages", json={"role": "assistant", "content": "hi"}
    )
    assert response.status_code == 422
    assert "body.role" in problem_fields(response)


async def test_rating_out_of_range_is_a_422_naming_rating(client):
    run = await create_run(client)
    for rating in (1.5, -0.1):
        response = await client.post(
            f"/v1/runs/{run['id']}/feedback", json={"source": "human", "rating": rating}
        )
        assert response.status_code == 422
        assert "body.rating" in problem_fields(response)
    response = await client.post(
        f"/v1/runs/{run['id']}/feedback", json={"source": "judge", "rating": 0.5}
    )
    assert "body.source" in problem_fields(response)


async def test_a_message_for_another_tenants_run_is_a_404_naming_run_id(tenant_client):
    owner = await tenant_client("tenant-a")
    other = await tenant_client("tenant-b")
    run = await create_run(owner)
    for path, payload in (
        (f"/v1/runs/{run['id']}/messages", {"role": "human", "content": "x"}),
        (f"/v1/runs/{run['id']}/messages/batch", {"items": [{"role": "human", "content": "x"}]}),
        (f"/v1/runs/{run['id']}/feedback", {"source": "human", "rating": 1}),
    ):
        response = await other.post(path, json=payload)
        assert response.status_code == 404, (path, response.text)
        assert problem_fields(response) == {"run_id"}
    assert (await owner.get(f"/v1/runs/{run['id']}")).json()["messages"] == []
    assert (await other.get(f"/v1/runs/{UNKNOWN}")).status_code == 404


async def test_failure_loop_finds_similar_failures_with_their_feedback(client):
    failed = await create_run(
        client, task_id="invoice-1", summary="Sum an invoice table", success=False
    )
    await post(
        client,
        f"/v1/runs/{failed['id']}/feedback",
        source="critic",
        rating=0.2,
        rationale="The VAT line was counted twice",
    )
    passed = await create_run(
        client, task_id="invoice-2", summary="Sum an invoice table", success=True
    )
    unrelated = await create_run(
        client, task_id="poem", summary="Write a haiku about autumn", success=False
    )
    response = await client.post(
        "/v1/runs/search", json={"query": "add up the totals of an invoice", "success": False}
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    ids = [hit["id"] for hit in results]
    assert ids[0] == failed["id"] and passed["id"] not in ids and unrelated["id"] in ids
    assert [f["rationale"] for f in results[0]["feedback"]] == ["The VAT line was counted twice"]
    assert results[0]["similarity"] > results[-1]["similarity"]


async def test_run_search_matches_messages(client):
    run = await create_run(client, task_id="t-1", summary="Generic task")
    await post(
        client,
        f"/v1/runs/{run['id']}/messages",
        role="executor",
        content="The database migration failed with a lock timeout",
    )
    await create_run(client, task_id="t-2", summary="Another generic task")
    results = (
        await client.post("/v1/runs/search", json={"query": "migration lock timeout"})
    ).json()["results"]
    assert results[0]["id"] == run["id"]
    assert results[0]["matched_message"]["content"].startswith("The database migration")


async def test_failed_runs_critic_feedback_becomes_a_candidate_rule(client, sql):
    run = await create_run(client, task_id="invoice", success=False)
    feedback = await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.1,
        rationale="Check the VAT line before summing",
    )
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="human",
        rating=0.1,
        rationale="humans are not lessons",
    )
    response = await client.post("/v1/runs/lessons", json={})
    assert response.status_code == 200, response.text
    [rule_id] = response.json()["rule_ids"]
    rule = (await client.get(f"/v1/rules/{rule_id}")).json()
    assert (rule["content"], rule["maturity"]) == (
        "When doing task invoice: Check the VAT line before summing",
        "candidate",
    )
    links = (
        await client.get("/v1/links", params={"memory_type": "rule", "memory_id": rule_id})
    ).json()["items"]
    assert {(link["target_type"], link["target_id"], link["relation"]) for link in links} == {
        ("run_feedback", feedback["id"], "derived_from"),
        ("run", run["id"], "derived_from"),
    }
    detail = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert [f["lesson_rule_id"] for f in detail["feedback"]] == [rule_id, None]
    again = (await client.post("/v1/runs/lessons", json={})).json()
    assert again["rules_created"] == 0


async def test_pii_scrub_replaces_matches_with_salted_hashes(client, app, settings):
    run = await create_run(client)
    await post(
        client,
        f"/v1/runs/{run['id']}/messages",
        role="human",
        content="Mail ann@example.com or call +44 20 7946 0958",
    )
    await post(
        client, f"/v1/runs/{run['id']}/messages", role="human", content="Ann again: ann@example.com"
    )
    clean = await post(
        client, f"/v1/runs/{run['id']}/messages", role="planner", content="No personal data here"
    )
    ctx = job_context(app, settings)
    ctx = type(ctx)(
        ctx.sessionmaker,
        ctx.settings.model_copy(update={"runs": RunSettings(pii_hash_salt=SecretStr("pepper"))}),
        ctx.embedder,
    )
    queued = await client.post("/v1/jobs/pii-scrub")
    assert queued.status_code == 202, queued.text
    await worker.drain(ctx)
    job = (await client.get(f"/v1/jobs/{queued.json()['id']}")).json()
    assert job["status"] == "succeeded", job
    assert job["result"] == {
        "messages_checked": 3,
        "messages_rewritten": 2,
        "matches": 3,
        "runs_checked": 1,
        "runs_rewritten": 0,
        "feedback_checked": 0,
        "feedback_rewritten": 0,
        "rules_checked": 0,
        "rules_rewritten": 0,
        "episodes_checked": 0,
        "episodes_rewritten": 0,
    }
    messages = (await client.get(f"/v1/runs/{run['id']}")).json()["messages"]
    first, second, third = (m["content"] for m in messages)
    assert "ann@example.com" not in first and "7946" not in first
    assert "[pii:email:" in first and "[pii:phone:" in first
    email_token = first.split()[1]
    assert email_token in second  # the same value hashes alike
    assert third == clean["content"]
    found = await client.post(
        "/v1/search", json={"query": "ann@example.com", "mode": "keyword", "types": ["run_message"]}
    )
    assert found.status_code == 200
    assert all("ann@example.com" not in hit["content"] for hit in found.json()["results"])


async def _scrub(client, app, settings):
    queued = await client.post("/v1/jobs/pii-scrub")
    assert queued.status_code == 202, queued.text
    await worker.drain(job_context(app, settings))
    return (await client.get(f"/v1/jobs/{queued.json()['id']}")).json()


async def test_pii_scrub_without_a_configured_salt_makes_one_and_keeps_it(
    client, app, settings, sql
):
    assert settings.runs.pii_hash_salt is None
    run = await create_run(client)
    await post(
        client, f"/v1/runs/{run['id']}/messages", role="human", content="Mail ann@example.com today"
    )

    job = await _scrub(client, app, settings)

    assert job["status"] == "succeeded", job
    assert job["result"]["messages_rewritten"] == 1
    [first] = (await client.get(f"/v1/runs/{run['id']}")).json()["messages"]
    assert "ann@example.com" not in first["content"]
    assert "[pii:email:" in first["content"]
    await post(
        client, f"/v1/runs/{run['id']}/messages", role="human", content="Again: ann@example.com"
    )
    assert (await _scrub(client, app, settings))["status"] == "succeeded"
    [_, second] = (await client.get(f"/v1/runs/{run['id']}")).json()["messages"]
    assert first["content"].split()[1] in second["content"]  # the kept salt hashes alike
    assert len(await sql("SELECT salt FROM pii_salts WHERE tenant_id = 'default'")) == 1


async def test_a_run_cannot_finish_before_it_started(client):
    response = await client.post(
        "/v1/runs",
        json={
            "task_id": "t",
            "started_at": "2026-11-22T10:00:00+00:00",
            "finished_at": "2026-11-22T09:00:00+00:00",
        },
    )
    assert response.status_code == 422
    assert problem_fields(response) == {"finished_at"}
    run = await create_run(client, started_at="2026-11-22T10:00:00+00:00")
    response = await client.patch(
        f"/v1/runs/{run['id']}", json={"finished_at": "2026-11-21T10:00:00+00:00"}
    )
    assert response.status_code == 422
    assert problem_fields(response) == {"finished_at"}


async def test_patching_another_tenants_run_is_a_404(tenant_client):
    run = await create_run(await tenant_client("tenant-a"))
    response = await (await tenant_client("tenant-b")).patch(
        f"/v1/runs/{run['id']}", json={"success": True}
    )
    assert response.status_code == 404


async def test_links_may_join_runs_and_memories(client):
    run = await create_run(client)
    episode = await post(
        client, "/v1/episodes", content="The user asked for an invoice", butler="chat"
    )
    link = await post(
        client,
        "/v1/links",
        source_type="run",
        source_id=run["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )
    assert (link["source_type"], link["target_type"]) == ("run", "episode")
    missing = await client.post(
        "/v1/links",
        json={
            "source_type": "run",
            "source_id": UNKNOWN,
            "target_type": "episode",
            "target_id": episode["id"],
            "relation": "related_to",
        },
    )
    assert missing.status_code == 422 and problem_fields(missing) == {"source_id"}
