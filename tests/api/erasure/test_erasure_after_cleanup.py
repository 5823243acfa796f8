"""An erasure of a session, butler or task done after cleanup deleted its episodes or runs
takes what was learned from them, and the events naming it, exactly as one done the day
they were stored."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.core.config import RunSettings
from app.core.scope import Scope, scope_session
from app.repositories.erasure import TOMBSTONE_EVENTS
from app.schemas.erasures import ErasureCreate
from app.services.erasures import preview_erasure
from app.worker.session_backfill import infer_missing_sessions
from tests.support.factories import create_entity, store_episode, store_fact
from tests.support.http import post
from tests.support.jobs import consolidate, job_context, run_job
from tests.support.rights import erase, marker_hits

GONE = "6402917"
KEPT = "3318804"


def _answer(prompt: str) -> dict[str, Any]:
    if GONE not in prompt:
        return {
            "new_facts": [
                {"subject": "Bob", "predicate": "drink", "content": f"Bob drinks green tea {KEPT}"}
            ]
        }
    return {
        "new_facts": [
            {"subject": "Ann", "predicate": "phone", "content": f"Ann's phone is {GONE}"}
        ],
        "new_rules": [{"content": f"Call Ann on {GONE}"}],
        "procedures": [
            {"name": "call_ann", "description": f"Dial {GONE}", "steps": [{"action": "dial"}]}
        ],
    }


async def _plant(client: httpx.AsyncClient, app: Any, settings: Any) -> dict[str, str]:
    """Two turns of butler `chat`'s session `s-gone`, one of butler `mail`'s `s-kept`,
    consolidated; a kept fact linked to and from what `s-gone` taught (events naming both
    ends, with reasoning). The ids of what was learned."""
    await store_episode(client, f"Bob likes green tea {KEPT}", butler="mail", session_id="s-kept")
    await store_episode(client, f"Ann said: call me on {GONE}", butler="chat", session_id="s-gone")
    await store_episode(client, f"Ann: dial {GONE} after nine", butler="chat", session_id="s-gone")
    await consolidate(client, app, settings, _answer)
    learned = {}
    for kind, path, params in (
        ("fact", "/v1/facts", {"subject": "Ann"}),
        ("rule", "/v1/rules", {"scope": "chat"}),
        ("procedure", "/v1/procedures", {"agent_id": "chat"}),
        ("bob", "/v1/facts", {"subject": "Bob"}),
    ):
        [item] = (await client.get(path, params=params)).json()["items"]
        learned[kind] = item["id"]
    note = await store_fact(
        client, subject="Carol", predicate="note", content=f"Carol keeps notes {KEPT}"
    )
    learned["note"] = note["id"]
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=note["id"],
        target_type="fact",
        target_id=learned["fact"],
        relation="related_to",
        reasoning=f"both mention {GONE}",
    )
    await post(
        client,
        "/v1/links",
        source_type="rule",
        source_id=learned["rule"],
        target_type="fact",
        target_id=note["id"],
        relation="supports",
        reasoning=f"the rule dials {GONE}",
    )
    return learned


async def _age(
    client: httpx.AsyncClient, app: Any, settings: Any, sql: Any, tenant_id: str
) -> None:
    """Move every episode past its TTL and let cleanup delete them."""
    await sql(
        "UPDATE episodes SET expires_at = now() - interval '1 day' WHERE tenant_id = :tenant_id",
        tenant_id=tenant_id,
    )
    job = await run_job(client, job_context(app, settings), "cleanup")
    assert job["status"] == "succeeded", job
    assert job["result"]["expired_deleted"] == 3
    assert (
        await sql("SELECT id FROM episodes WHERE tenant_id = :tenant_id", tenant_id=tenant_id) == []
    )


async def _naming(sql: Any, tenant_id: str, ids: list[str]) -> list[str]:
    """The types of the tenant's events (tombstones aside) whose payload names any of `ids`."""
    rows = await sql(
        "SELECT event_type, CAST(payload AS text) AS payload FROM memory_events "
        "WHERE tenant_id = :tenant_id",
        tenant_id=tenant_id,
    )
    return sorted(
        row["event_type"]
        for row in rows
        if row["event_type"] not in TOMBSTONE_EVENTS and any(i in row["payload"] for i in ids)
    )


async def _left(client: httpx.AsyncClient) -> dict[str, list[str]]:
    """What the tenant still holds, by kind, as content."""
    left = {}
    for kind, path, field in (
        ("fact", "/v1/facts", "content"),
        ("rule", "/v1/rules", "content"),
        ("procedure", "/v1/procedures", "name"),
    ):
        items = (await client.get(path, params={"limit": 100})).json()["items"]
        left[kind] = sorted(item[field] for item in items)
    return left


def _erased(job: dict[str, Any]) -> dict[str, int]:
    receipt = job["result"]["deleted"]
    return {table: receipt.get(table, 0) for table in ("facts", "rules", "procedures")}


@pytest.mark.parametrize("selector", [{"session_id": "s-gone"}, {"butler": "chat"}])
async def test_an_erasure_after_cleanup_takes_what_one_on_day_one_takes(
    selector, app, settings, tenant_client, sql, db_engine
):
    day_one = await tenant_client("erased-day-one")
    learned_then = await _plant(day_one, app, settings)
    job_then = await erase(day_one, app, settings, **selector)

    later = await tenant_client("erased-later")
    learned = await _plant(later, app, settings)
    await _age(later, app, settings, sql, "erased-later")
    doomed = [learned[kind] for kind in ("fact", "rule", "procedure")]
    assert await _naming(sql, "erased-later", doomed)
    job = await erase(later, app, settings, **selector)

    assert _erased(job) == _erased(job_then) == {"facts": 1, "rules": 1, "procedures": 1}
    assert (
        await _left(later)
        == await _left(day_one)
        == {
            "fact": [f"Bob drinks green tea {KEPT}", f"Carol keeps notes {KEPT}"],
            "rule": [],
            "procedure": [],
        }
    )
    for path in ("/v1/facts", "/v1/rules", "/v1/procedures"):
        kind = path.removeprefix("/v1/").removesuffix("s")
        assert (await later.get(f"{path}/{learned[kind]}")).status_code == 404
    assert await _naming(sql, "erased-later", doomed) == []
    assert (
        await _naming(
            sql, "erased-day-one", [learned_then[kind] for kind in ("fact", "rule", "procedure")]
        )
        == []
    )
    assert await marker_hits(db_engine, GONE, "erased-later") == {}
    assert await marker_hits(db_engine, GONE, "erased-day-one") == {}
    assert KEPT in json.dumps((await later.get(f"/v1/facts/{learned['bob']}")).json())


async def test_the_preview_after_cleanup_names_what_was_learned(app, settings, tenant_client, sql):
    later = await tenant_client("previewed-later")
    learned = await _plant(later, app, settings)
    await _age(later, app, settings, sql, "previewed-later")
    for selector in ({"session_id": "s-gone"}, {"butler": "chat"}):
        async with app.state.sessionmaker() as session:
            scope_session(session, Scope(tenant_id="previewed-later"))
            preview = await preview_erasure(
                session, tenant_id="previewed-later", request=ErasureCreate(**selector)
            )
        named = {(item.memory_type, item.id) for item in preview.items}
        assert named == {
            ("fact", learned["fact"]),
            ("rule", learned["rule"]),
            ("procedure", learned["procedure"]),
        }, selector


async def _lesson(client: httpx.AsyncClient, task_id: str) -> str:
    """A failed run of `task_id` finished 40 days ago, criticised; the rule it taught."""
    now = datetime.now(UTC)
    run = await post(
        client,
        "/v1/runs",
        task_id=task_id,
        success=False,
        started_at=(now - timedelta(days=41)).isoformat(),
        finished_at=(now - timedelta(days=40)).isoformat(),
        summary=f"Called Ann on {GONE}",
    )
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.1,
        rationale=f"Ann's phone is {GONE}, not the office code",
    )
    lessons = await client.post("/v1/runs/lessons", json={"run_id": run["id"]})
    [rule_id] = lessons.json()["rule_ids"]
    return str(rule_id)


async def test_a_task_erased_after_its_runs_expired_takes_the_rules_they_taught(
    app, settings, client
):
    gone = await _lesson(client, "call-ann")
    kept = await _lesson(client, "call-bob")
    ctx = job_context(app, settings)
    ctx = type(ctx)(
        ctx.sessionmaker,
        ctx.settings.model_copy(update={"runs": RunSettings(retention_days=30)}),
        ctx.embedder,
    )
    job = await run_job(client, ctx, "cleanup")
    assert job["result"]["runs_deleted"] == 2, job

    job = await erase(client, app, settings, task_id="call-ann")

    assert job["result"]["deleted"]["rules"] == 1
    assert (await client.get(f"/v1/rules/{gone}")).status_code == 404
    assert (await client.get(f"/v1/rules/{kept}")).status_code == 200


async def test_a_key_limited_to_a_butler_records_where_a_shared_fact_was_learned(
    app, settings, client, limited_client, sql
):
    shared = await store_fact(
        client, subject="Ann", predicate="phone", content=f"Ann's phone is {GONE}"
    )
    chat = await limited_client("default", ["chat"])
    episode = await store_episode(
        chat, f"Ann said: call me on {GONE}", butler="chat", session_id="s-limited"
    )
    await post(
        chat,
        "/v1/links",
        source_type="fact",
        source_id=shared["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )
    [row] = await sql("SELECT origins FROM facts WHERE id = :id", id=shared["id"])
    assert row["origins"] == ["butler:chat", "session:s-limited"]


async def test_a_session_given_after_consolidation_still_takes_what_was_learned(
    app, settings, client, monkeypatch
):
    monkeypatch.setattr(app.state.settings, "episode_session_gap_minutes", 0)
    episode = await store_episode(
        client, f"Ann said: call me on {GONE}", butler="placed", occurred_at="2024-03-01T10:00:00Z"
    )
    fact = await store_fact(
        client, subject="Ann", predicate="phone", content=f"Ann's phone is {GONE}"
    )
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=fact["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )
    assert await infer_missing_sessions(app.state.sessionmaker, gap_minutes=15) >= 1
    inferred = (await client.get(f"/v1/episodes/{episode['id']}")).json()["inferred_session"]
    assert inferred is not None
    assert (await client.delete(f"/v1/episodes/{episode['id']}")).status_code == 204

    job = await erase(client, app, settings, session_id=inferred)

    assert job["result"]["deleted"]["facts"] == 1
    assert (await client.get(f"/v1/facts/{fact['id']}")).status_code == 404


async def test_deleting_a_run_or_erasing_an_entity_takes_the_link_events_naming_it(
    app, settings, client, sql
):
    note = await store_fact(
        client, subject="Carol", predicate="note", content=f"Carol keeps notes {KEPT}"
    )
    run = await post(client, "/v1/runs", task_id="call-ann", summary="Called Ann")
    entity = await create_entity(client, "Ann Example")
    for target_type, target in (("run", run), ("entity", entity)):
        await post(
            client,
            "/v1/links",
            source_type="fact",
            source_id=note["id"],
            target_type=target_type,
            target_id=target["id"],
            relation="related_to",
            reasoning=f"Ann's phone is {GONE}",
        )
    assert (await _naming(sql, "default", [run["id"], entity["id"]])).count("link_created") == 2

    assert (await client.delete(f"/v1/runs/{run['id']}")).status_code == 204
    await erase(client, app, settings, entity_id=entity["id"])

    assert await _naming(sql, "default", [run["id"], entity["id"]]) == []
