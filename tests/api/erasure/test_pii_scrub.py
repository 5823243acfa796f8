"""The scheduled PII scrub: an address planted in every text a person's data can reach
leaves no raw copy on any read path, in the export or in the database."""

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any

from app.worker import scheduler, worker
from app.worker.pii import Scrubber
from tests.support.factories import store_episode, store_rule
from tests.support.http import post
from tests.support.jobs import job_context
from tests.support.mcp import ok
from tests.support.rights import marker_hits

ADDRESS = "bob.kline@corpmail.com"
QUERY = f"contact {ADDRESS} before shipping"


async def _failed_run(client: Any, task_id: str) -> dict[str, Any]:
    run = await post(
        client,
        "/v1/runs",
        task_id=task_id,
        success=False,
        summary=f"Shipping the spare parts to {ADDRESS}",
        meta={"requested_by": ADDRESS},
    )
    await post(
        client,
        f"/v1/runs/{run['id']}/messages",
        role="human",
        content=f"Write to {ADDRESS} when it ships",
    )
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.1,
        rationale=f"Contact {ADDRESS} before shipping",
    )
    return run


async def _plant(client: Any) -> dict[str, Any]:
    """A run (its summary and meta hold the address too) whose lesson is learned before the
    scrub; a second run learned after it; a rule and episodes (one of a session, one long
    enough for passages) holding the address in their content and metadata."""
    early = await _failed_run(client, "ship-parts")
    [early_lesson] = (await client.post("/v1/runs/lessons", json={"run_id": early["id"]})).json()[
        "rule_ids"
    ]
    late = await _failed_run(client, "ship-tools")
    rule = await store_rule(
        client, f"Copy {ADDRESS} on every shipping notice", metadata={"owner": ADDRESS}
    )
    first = await store_episode(
        client,
        f"Bob said his address is {ADDRESS}",
        session_id="s-1",
        metadata={"reply_to": [ADDRESS]},
    )
    second = await store_episode(client, "He wants the parts by Friday", session_id="s-1")
    long = await store_episode(client, "Shipping notes. " * 70 + f"Mail {ADDRESS}.")
    return {
        "early": early,
        "early_lesson": early_lesson,
        "late": late,
        "rule": rule,
        "episodes": [first, second, long],
    }


async def _reads(client: Any, planted: dict[str, Any]) -> dict[str, Any]:
    """Every HTTP read path that shows what was planted, by name."""
    answers: dict[str, Any] = {"export": (await client.get("/v1/export")).text}
    for mode in ("semantic", "keyword", "hybrid"):
        answers[f"search {mode}"] = (
            await client.post(
                "/v1/search",
                json={
                    "query": QUERY,
                    "mode": mode,
                    "limit": 100,
                    "min_confidence": 0,
                    "types": ["episode", "fact", "rule", "run", "run_message"],
                },
            )
        ).json()
    answers["recall"] = (
        await client.post("/v1/recall", json={"topic": QUERY, "limit": 100, "min_confidence": 0})
    ).json()
    answers["context"] = (await client.post("/v1/context", json={"trigger_prompt": QUERY})).json()
    answers["run search"] = (
        await client.post("/v1/runs/search", json={"query": QUERY, "limit": 100})
    ).json()
    for name in ("early", "late"):
        answers[f"run {name}"] = (await client.get(f"/v1/runs/{planted[name]['id']}")).json()
    answers["rules"] = (await client.get("/v1/rules", params={"limit": 100})).json()
    for episode in planted["episodes"]:
        answers[f"episode {episode['id']}"] = (
            await client.get(f"/v1/episodes/{episode['id']}")
        ).json()
    return answers


def _raw(answers: dict[str, Any]) -> list[str]:
    return [name for name, answer in answers.items() if ADDRESS in json.dumps(answer)]


async def test_the_scheduled_scrub_leaves_no_raw_address_anywhere(
    client, app, settings, db_engine, mcp_as
):
    planted = await _plant(client)
    assert len(_raw(await _reads(client, planted))) >= 10, "planted where it is read"
    ctx = job_context(app, settings)

    created = await scheduler.tick(ctx, now=datetime.now(UTC))
    await worker.drain(ctx)

    [scrub] = [job for job in created if job.kind == "pii_scrub"]
    assert scrub.tenant_id is None  # every tenant's
    answers = await _reads(client, planted)
    assert _raw(answers) == []
    assert await marker_hits(db_engine, ADDRESS, "default") == {}
    # The same address hashes alike wherever it was.
    detail = answers["run early"]
    token = detail["messages"][0]["content"].split()[2]
    assert token.startswith("[pii:email:")
    assert token in detail["feedback"][0]["rationale"]
    assert (detail["summary"], detail["meta"]) == (
        f"Shipping the spare parts to {token}",
        {"requested_by": token},
    )
    rules = {rule["id"]: rule for rule in answers["rules"]["items"]}
    assert token in rules[planted["early_lesson"]]["content"]  # made before the scrub
    assert rules[planted["rule"]["id"]]["metadata"] == {"owner": token}
    first = answers[f"episode {planted['episodes'][0]['id']}"]
    assert first["content"] == f"Bob said his address is {token}"
    assert first["metadata"]["reply_to"] == [token]

    # A lesson learned from scrubbed feedback carries the scrubbed text.
    [late_lesson] = (
        await client.post("/v1/runs/lessons", json={"run_id": planted["late"]["id"]})
    ).json()["rule_ids"]
    lesson = (await client.get(f"/v1/rules/{late_lesson}")).json()
    assert lesson["content"] == f"When doing task ship-tools: Contact {token} before shipping"

    # The rewritten rows are found by their new text, and by meaning as before.
    found = (
        await client.post(
            "/v1/search", json={"query": token, "mode": "keyword", "types": ["episode", "rule"]}
        )
    ).json()["results"]
    assert planted["episodes"][0]["id"] in {hit["id"] for hit in found}
    async with mcp_as("default") as session:
        for tool, arguments in {
            "run_get": {"run_id": planted["early"]["id"]},
            "run_search": {"query": QUERY},
            "memory_search": {"query": QUERY, "limit": 100, "min_confidence": 0},
            "memory_recall": {"topic": QUERY, "limit": 100},
        }.items():
            assert ADDRESS not in json.dumps(ok(await session.call_tool(tool, arguments)))


async def test_a_second_scrub_checks_only_what_is_new(client, app, settings):
    await _plant(client)
    queued = await client.post("/v1/jobs/pii-scrub")
    ctx = job_context(app, settings)
    await worker.drain(ctx)
    first = (await client.get(f"/v1/jobs/{queued.json()['id']}")).json()["result"]
    assert (
        first["runs_rewritten"],
        first["feedback_rewritten"],
        first["rules_rewritten"],
        first["episodes_rewritten"],
    ) == (2, 2, 2, 2)
    await store_episode(client, "Nothing personal here")

    again = await client.post("/v1/jobs/pii-scrub")
    await worker.drain(ctx)
    second = (await client.get(f"/v1/jobs/{again.json()['id']}")).json()["result"]

    assert (second["episodes_checked"], second["episodes_rewritten"]) == (1, 0)
    assert (second["runs_checked"], second["feedback_checked"], second["rules_checked"]) == (
        0,
        0,
        0,
    )


# Texts on which a pattern that retries from every position takes seconds.
HOSTILE = ("a" * 50_000, ("a1" * 25_000), "a@" + "b" * 49_998)


async def _hostile_rows(client: Any, sql: Any) -> list[str]:
    """Episodes, a rule and a run message holding texts built to slow a regex down."""
    ids = []
    for text in HOSTILE:
        episode = await store_episode(client, "placeholder")
        await sql("UPDATE episodes SET content = :text WHERE id = :id", text=text, id=episode["id"])
        ids.append(episode["id"])
    rule = await store_rule(client, "placeholder rule")
    await sql("UPDATE rules SET content = :text WHERE id = :id", text=HOSTILE[0], id=rule["id"])
    run = await post(client, "/v1/runs", task_id="long-texts", success=True)
    await post(client, f"/v1/runs/{run['id']}/messages", role="human", content="placeholder")
    await sql(
        "UPDATE run_messages SET content = :text WHERE run_id = :id", text=HOSTILE[1], id=run["id"]
    )
    return ids


async def test_the_event_loop_keeps_turning_while_long_texts_are_scrubbed(
    client, app, settings, sql
):
    await _hostile_rows(client, sql)
    ctx = job_context(app, settings)
    queued = await client.post("/v1/jobs/pii-scrub")
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        await worker.drain(ctx)
    finally:
        done.set()
        await ticking
    job = (await client.get(f"/v1/jobs/{queued.json()['id']}")).json()
    assert job["status"] == "succeeded", job
    assert job["result"]["episodes_checked"] == 3
    # Other requests are served meanwhile: the loop never stalls for long.
    assert max(gaps) < 0.5, f"the event loop stalled {max(gaps):.2f} s"


async def test_texts_are_scrubbed_off_the_event_loop_with_no_connection_held(
    client, app, settings, monkeypatch
):
    await _plant(client)
    pool = app.state.sessionmaker.kw["bind"].pool
    calls: list[tuple[bool, int]] = []
    scrub = Scrubber.scrub

    def watched(self: Scrubber, text: str) -> tuple[str, int]:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        calls.append((on_loop, pool.checkedout()))
        return scrub(self, text)

    monkeypatch.setattr(Scrubber, "scrub", watched)
    queued = await client.post("/v1/jobs/pii-scrub")
    await worker.drain(job_context(app, settings))

    job = (await client.get(f"/v1/jobs/{queued.json()['id']}")).json()
    assert job["result"]["episodes_rewritten"] == 2, job
    assert calls, "the scrub ran"
    assert {on_loop for on_loop, _ in calls} == {False}
    assert {held for _, held in calls} == {0}
