"""Deleting a task run: over REST and MCP, nothing of it stays on a read path."""

import json
from typing import Any

from app.core.scope import SYSTEM, scoped_transaction
from app.services import api_keys
from app.worker import worker
from tests.support.console import console_client
from tests.support.factories import create_run, store_fact
from tests.support.http import post
from tests.support.jobs import job_context
from tests.support.mcp import error_text, ok
from tests.support.rights import marker_hits

MARKER = "5517209"


async def _planted(client: Any, marker: str, depot: str = "9") -> dict[str, Any]:
    """A failed run with messages, critic feedback, a lesson rule and a fact linked to it."""
    run = await create_run(
        client,
        task_id="ship-order",
        success=False,
        summary=f"Shipped order {marker} to the wrong depot",
    )
    response = await client.post(
        f"/v1/runs/{run['id']}/messages/batch",
        json={
            "items": [
                {"role": "planner", "content": f"Look up order {marker}"},
                {"role": "executor", "content": f"Sent order {marker} to depot 9"},
            ]
        },
    )
    assert response.status_code == 201, response.text
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.1,
        rationale="Check the depot before shipping",
    )
    [rule_id] = (await client.post("/v1/runs/lessons", json={"run_id": run["id"]})).json()[
        "rule_ids"
    ]
    fact = await store_fact(
        client,
        subject=f"Depot {depot}",
        predicate="status",
        content=f"Depot {depot} is closed on Mondays",
    )
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=fact["id"],
        target_type="run",
        target_id=run["id"],
        relation="related_to",
    )
    return {"run": run, "rule_id": rule_id, "fact": fact}


async def _reads(client: Any, run_id: str) -> dict[str, Any]:
    """Every HTTP read path that shows runs or their parts."""
    answers: dict[str, Any] = {
        "list": (await client.get("/v1/runs")).json(),
        "run search": (
            await client.post(
                "/v1/runs/search", json={"query": f"order {MARKER} depot", "limit": 100}
            )
        ).json(),
        "export": (await client.get("/v1/export")).text,
    }
    for mode in ("semantic", "keyword", "hybrid"):
        answers[f"search {mode}"] = (
            await client.post(
                "/v1/search",
                json={
                    "query": f"order {MARKER} depot",
                    "types": ["run", "run_message"],
                    "mode": mode,
                    "limit": 100,
                },
            )
        ).json()
    return answers


async def _run_links(client: Any, memory_type: str, memory_id: str) -> list[str]:
    """The runs a memory links to (a run lesson also links to its feedback)."""
    links = (
        await client.get("/v1/links", params={"memory_type": memory_type, "memory_id": memory_id})
    ).json()["items"]
    return [link["target_id"] for link in links if link["target_type"] == "run"]


def _leaks(answers: dict[str, Any], *needles: str) -> dict[str, list[str]]:
    found = {
        name: [n for n in needles if n in json.dumps(answer)] for name, answer in answers.items()
    }
    return {name: hit for name, hit in found.items() if hit}


async def test_deleting_a_run_takes_its_messages_feedback_links_and_events(
    app, client, db_engine, sql
):
    planted = await _planted(client, MARKER)
    kept = await _planted(client, "4400128", depot="7")
    run_id = planted["run"]["id"]
    message_ids = [m["id"] for m in (await client.get(f"/v1/runs/{run_id}")).json()["messages"]]
    assert _leaks(await _reads(client, run_id), MARKER, run_id), "findable before"
    assert await _run_links(client, "fact", planted["fact"]["id"]) == [run_id]
    assert set(await _run_links(client, "rule", planted["rule_id"])) == {run_id}

    response = await client.delete(f"/v1/runs/{run_id}")

    assert response.status_code == 204, response.text
    assert (await client.get(f"/v1/runs/{run_id}")).status_code == 404
    assert _leaks(await _reads(client, run_id), MARKER, run_id, *message_ids) == {}
    assert await _run_links(client, "rule", planted["rule_id"]) == []
    assert await _run_links(client, "fact", planted["fact"]["id"]) == []
    # The lesson stays, a rule of its own; only its provenance went.
    assert (await client.get(f"/v1/rules/{planted['rule_id']}")).status_code == 200
    assert await marker_hits(db_engine, MARKER, "default") == {}
    [tombstone] = await sql("SELECT payload FROM memory_events WHERE event_type = 'run_deleted'")
    assert tombstone["payload"] == {"memory_type": "run", "memory_id": run_id}
    assert await sql("SELECT id FROM memory_events WHERE payload ->> 'run_id' = :r", r=run_id) == []
    # The other run is untouched.
    other = (await client.get(f"/v1/runs/{kept['run']['id']}")).json()
    assert (len(other["messages"]), len(other["feedback"])) == (2, 1)
    assert (await client.delete(f"/v1/runs/{run_id}")).status_code == 404


async def test_a_deleted_run_leaves_the_console(app, client):
    planted = await _planted(client, MARKER)
    run_id = planted["run"]["id"]
    minted = await _mint(app)
    http = await console_client(app, minted)
    try:
        assert MARKER in (await http.get("/ui/runs")).text
        assert (await client.delete(f"/v1/runs/{run_id}")).status_code == 204
        assert MARKER not in (await http.get("/ui/runs")).text
        assert (await http.get(f"/ui/runs/{run_id}")).status_code == 404
    finally:
        await http.aclose()


async def _mint(app: Any) -> str:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        return (await api_keys.create_key(session, tenant_id="default", access="write")).secret


async def test_deleting_another_tenants_run_is_a_404_and_keeps_it(tenant_client):
    owner = await tenant_client("tenant-a")
    run = await create_run(owner)
    response = await (await tenant_client("tenant-b")).delete(f"/v1/runs/{run['id']}")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (await owner.get(f"/v1/runs/{run['id']}")).status_code == 200


async def test_a_malformed_run_id_is_a_422(client):
    response = await client.delete("/v1/runs/not-a-uuid")
    assert response.status_code == 422


async def test_the_mcp_tool_deletes_a_run(client, mcp_as):
    planted = await _planted(client, MARKER)
    run_id = planted["run"]["id"]
    async with mcp_as("default") as session:
        receipt = ok(await session.call_tool("run_delete", {"run_id": run_id}))
        assert (receipt["type"], receipt["id"]) == ("run", run_id)
        assert receipt["deleted"]["runs"] == 1 and receipt["deleted"]["run_messages"] == 2
        assert receipt["deleted"]["run_feedback"] == 1
        assert "not found" in error_text(await session.call_tool("run_get", {"run_id": run_id}))
        found = ok(await session.call_tool("run_search", {"query": f"order {MARKER}"}))
        assert run_id not in json.dumps(found)
        again = await session.call_tool("run_delete", {"run_id": run_id})
        assert "not found" in error_text(again)
    assert (await client.get(f"/v1/runs/{run_id}")).status_code == 404


async def test_the_mcp_erase_tool_takes_every_run_of_a_task(app, settings, client, mcp_as):
    planted = await _planted(client, MARKER)
    kept = await create_run(client, task_id="other-task")
    async with mcp_as("default") as session:
        job = ok(await session.call_tool("memory_erase", {"task_id": "ship-order"}))
    await worker.drain(job_context(app, settings))
    finished = (await client.get(f"/v1/jobs/{job['id']}")).json()
    assert finished["status"] == "succeeded", finished
    assert finished["result"]["deleted"]["runs"] == 1
    assert finished["result"]["deleted"]["rules"] == 1  # the lesson learned from it
    assert finished["params"] == {"selector": "task_id"}
    assert (await client.get(f"/v1/runs/{planted['run']['id']}")).status_code == 404
    assert (await client.get(f"/v1/rules/{planted['rule_id']}")).status_code == 404
    assert (await client.get(f"/v1/runs/{kept['id']}")).status_code == 200


async def test_erasing_an_unknown_run_is_a_404_naming_run_id(client):
    response = await client.post(
        "/v1/erasures", json={"run_id": "00000000-0000-4000-8000-000000000000"}
    )
    assert response.status_code == 404
    assert [e["field"] for e in response.json()["errors"]] == ["run_id"]
