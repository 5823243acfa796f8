"""Runs, run messages and reflections through /v1/search (opt-in types)."""

import pytest

from tests.support.factories import store_fact
from tests.support.http import post


async def _arrange(client):
    run = await post(
        client,
        "/v1/runs",
        task_id="invoice",
        summary="Reconcile the ledger of a wholesale invoice",
        success=False,
    )
    message = await post(
        client,
        f"/v1/runs/{run['id']}/messages",
        role="executor",
        content="Kubernetes pod crashed with an out-of-memory error",
    )
    event = await post(
        client,
        "/v1/ledgers/town/events",
        agent_id="alice",
        kind="agent.spoke",
        content="The lighthouse keeper waved",
        turn=1,
    )
    reflection = await post(
        client,
        "/v1/ledgers/town/agents/alice/reflections",
        belief="The lighthouse keeper is friendly",
        based_on=[event["id"]],
    )
    fact = await store_fact(client, "keeper", "job", "The keeper tends the lighthouse")
    return run, message, event, reflection, fact


async def _search(client, **body):
    response = await client.post("/v1/search", json=body)
    assert response.status_code == 200, response.text
    return response.json()["results"]


@pytest.mark.parametrize("mode", ["semantic", "keyword", "hybrid"])
async def test_each_record_type_is_found_when_asked_for(client, mode):
    run, message, _, reflection, _ = await _arrange(client)
    [hit] = await _search(client, query="wholesale invoice ledger", types=["run"], mode=mode)
    assert (hit["memory_type"], hit["id"], hit["task_id"]) == ("run", run["id"], "invoice")
    hits = await _search(client, query="pod out-of-memory", types=["run_message"], mode=mode)
    assert (hits[0]["memory_type"], hits[0]["id"], hits[0]["role"]) == (
        "run_message",
        message["id"],
        "executor",
    )
    hits = await _search(
        client, query="friendly lighthouse keeper", types=["reflection"], mode=mode
    )
    # Only reflections, never the plain ledger event.
    assert [(h["memory_type"], h["id"]) for h in hits] == [("reflection", reflection["id"])]


async def test_records_are_not_searched_by_default(client):
    await _arrange(client)
    hits = await _search(client, query="lighthouse keeper")
    assert {hit["memory_type"] for hit in hits} == {"fact"}


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
async def test_memories_and_records_merge_in_one_answer(client, fusion):
    _, _, _, reflection, fact = await _arrange(client)
    hits = await _search(
        client, query="lighthouse keeper", types=["fact", "reflection"], fusion=fusion
    )
    assert {(h["memory_type"], h["id"]) for h in hits} == {
        ("fact", fact["id"]),
        ("reflection", reflection["id"]),
    }
    assert all(h["fused_score"] is not None for h in hits)
