"""Procedures through HTTP: create, status, executions under concurrency, versions, search."""

import asyncio

import pytest

from tests.support.factories import store_episode, store_fact
from tests.support.http import post

DEPLOY_STEPS = [
    {"step": 1, "action": "run_tests", "params_template": {"suite": "{{suite}}"}},
    {"step": 2, "action": "build_image", "conditions": {"tests": "green"}},
    {"step": 3, "action": "deploy_to_staging"},
]


async def _procedure(client, name="deploy service", *, agent_id="ops", **fields):
    body = {
        "agent_id": agent_id,
        "name": name,
        "steps": DEPLOY_STEPS,
        "description": "Ship a service safely to staging.",
        **fields,
    }
    return await post(client, "/v1/procedures", **body)


def _field(response) -> set[str]:
    return {error["field"] for error in response.json()["errors"]}


async def test_create_stores_version_one_as_a_draft(client):
    stored = await _procedure(
        client, preconditions={"branch": "main"}, postconditions={"staging": "updated"}
    )
    assert (stored["version"], stored["status"], stored["superseded_by"]) == (1, "draft", None)
    assert [step["action"] for step in stored["steps"]] == [
        "run_tests",
        "build_image",
        "deploy_to_staging",
    ]
    assert stored["steps"][0]["params_template"] == {"suite": "{{suite}}"}
    assert stored["steps"][2]["conditions"] == {}
    assert (
        stored["execution_count"],
        stored["success_count"],
        stored["success_rate"],
        stored["avg_duration_ms"],
    ) == (0, 0, None, None)
    assert stored["preconditions"] == {"branch": "main"}
    fetched = await client.get(f"/v1/procedures/{stored['id']}")
    assert fetched.json() == stored


async def test_learned_from_creates_derived_from_links(client):
    episode = await store_episode(client, "Deployed after running the tests first.")
    fact = await store_fact(client, "deploys", "need", "Deploys need green tests.")
    stored = await _procedure(
        client,
        learned_from=[
            {"memory_type": "episode", "memory_id": episode["id"]},
            {"memory_type": "fact", "memory_id": fact["id"]},
        ],
    )
    assert stored["learned_from"] == [
        {"memory_type": "episode", "memory_id": episode["id"]},
        {"memory_type": "fact", "memory_id": fact["id"]},
    ]
    links = (
        await client.get("/v1/links", params={"memory_type": "episode", "memory_id": episode["id"]})
    ).json()["items"]
    assert [(link["source_type"], link["source_id"], link["relation"]) for link in links] == [
        ("procedure", stored["id"], "derived_from")
    ]


async def test_unknown_learned_from_memory_is_a_422_naming_it(client):
    response = await client.post(
        "/v1/procedures",
        json={
            "agent_id": "ops",
            "name": "x",
            "steps": DEPLOY_STEPS,
            "learned_from": [
                {"memory_type": "episode", "memory_id": "00000000-0000-4000-8000-000000000000"}
            ],
        },
    )
    assert response.status_code == 422
    assert _field(response) == {"learned_from.0.memory_id"}
    assert (await client.get("/v1/procedures")).json()["items"] == []


async def test_name_is_unique_per_agent(client):
    await _procedure(client)
    again = await client.post(
        "/v1/procedures", json={"agent_id": "ops", "name": "deploy service", "steps": DEPLOY_STEPS}
    )
    assert again.status_code == 409
    assert _field(again) == {"name"}
    other_agent = await _procedure(client, agent_id="release-bot")
    assert other_agent["name"] == "deploy service"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"steps": []}, "body.steps"),
        ({"steps": [{"step": 2, "action": "a"}]}, "body.steps"),
        ({"steps": [{"step": 1, "action": ""}]}, "body.steps.0.action"),
        (
            {"steps": [{"step": 1, "action": "a", "params_template": []}]},
            "body.steps.0.params_template",
        ),
        ({"status": "deprecated"}, "body.status"),
        ({"name": "   "}, "body.name"),
        ({"agent_id": None}, "body.agent_id"),
        (
            {"learned_from": [{"memory_type": "arc", "memory_id": "x"}]},
            "body.learned_from.0.memory_type",
        ),
    ],
)
async def test_bad_procedure_is_a_422_naming_the_field(client, change, field):
    body = {"agent_id": "ops", "name": "deploy", "steps": DEPLOY_STEPS, **change}
    response = await client.post("/v1/procedures", json=body)
    assert response.status_code == 422, response.text
    assert field in _field(response)


async def test_status_moves_from_draft_to_active_to_deprecated(client):
    stored = await _procedure(client)
    for status in ("active", "deprecated"):
        response = await client.patch(f"/v1/procedures/{stored['id']}", json={"status": status})
        assert response.status_code == 200
        assert response.json()["status"] == status
    bad = await client.patch(f"/v1/procedures/{stored['id']}", json={"status": "retired"})
    assert bad.status_code == 422
    assert _field(bad) == {"body.status"}


async def test_executions_update_counters_rate_and_mean_duration(client):
    stored = await _procedure(client)
    path = f"/v1/procedures/{stored['id']}/executions"
    for success, duration in ((True, 100), (True, 300), (False, None)):
        body = (
            {"success": success}
            if duration is None
            else {"success": success, "duration_ms": duration}
        )
        response = await client.post(path, json=body)
        assert response.status_code == 200
    result = response.json()
    assert (result["execution_count"], result["success_count"]) == (3, 2)
    assert result["success_rate"] == pytest.approx(2 / 3)
    assert result["avg_duration_ms"] == 200.0
    assert result["last_executed_at"] is not None


async def test_twenty_concurrent_executions_keep_exact_counters(client):
    stored = await _procedure(client)
    path = f"/v1/procedures/{stored['id']}/executions"
    responses = await asyncio.gather(
        *(
            client.post(path, json={"success": i % 4 != 0, "duration_ms": 10 * (i + 1)})
            for i in range(20)
        )
    )
    assert [r.status_code for r in responses] == [200] * 20
    result = (await client.get(f"/v1/procedures/{stored['id']}")).json()
    assert (result["execution_count"], result["success_count"]) == (20, 15)
    assert result["success_rate"] == 0.75
    assert result["avg_duration_ms"] == sum(10 * (i + 1) for i in range(20)) / 20


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body.success"),
        ({"success": "yes"}, "body.success"),
        ({"success": True, "duration_ms": -1}, "body.duration_ms"),
        ({"success": True, "duration_ms": 1.5}, "body.duration_ms"),
    ],
)
async def test_bad_execution_is_a_422_naming_the_field(client, body, field):
    stored = await _procedure(client)
    response = await client.post(f"/v1/procedures/{stored['id']}/executions", json=body)
    assert response.status_code == 422
    assert field in _field(response)
    assert (await client.get(f"/v1/procedures/{stored['id']}")).json()["execution_count"] == 0


async def test_execution_of_an_unknown_procedure_is_a_404(client):
    response = await client.post(
        "/v1/procedures/00000000-0000-4000-8000-000000000000/executions", json={"success": True}
    )
    assert response.status_code == 404


async def test_new_version_supersedes_the_old_one(client):
    episode = await store_episode(client, "Canary first.")
    v1 = await _procedure(
        client,
        status="active",
        learned_from=[{"memory_type": "episode", "memory_id": episode["id"]}],
    )
    await client.post(f"/v1/procedures/{v1['id']}/executions", json={"success": True})
    response = await client.post(
        f"/v1/procedures/{v1['id']}/versions",
        json={"steps": [*DEPLOY_STEPS, {"step": 4, "action": "deploy_canary"}]},
    )
    assert response.status_code == 201
    v2 = response.json()
    assert (v2["version"], v2["name"], v2["agent_id"], v2["status"]) == (
        2,
        "deploy service",
        "ops",
        "active",
    )
    assert (v2["execution_count"], v2["description"], v2["learned_from"]) == (
        0,
        v1["description"],
        v1["learned_from"],
    )
    old = (await client.get(f"/v1/procedures/{v1['id']}")).json()
    assert (old["superseded_by"], old["status"], old["execution_count"]) == (
        v2["id"],
        "deprecated",
        1,
    )


async def test_an_execution_of_a_superseded_version_is_a_409_naming_it(client):
    v1 = await _procedure(client, status="active")
    await client.post(f"/v1/procedures/{v1['id']}/executions", json={"success": True})
    v2 = await post(client, f"/v1/procedures/{v1['id']}/versions", steps=DEPLOY_STEPS[:2])
    response = await client.post(
        f"/v1/procedures/{v1['id']}/executions", json={"success": False, "duration_ms": 10}
    )
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["errors"][0]["field"] == "procedure_id"
    assert "version 1" in problem["detail"] and v2["id"] in problem["detail"]
    old = (await client.get(f"/v1/procedures/{v1['id']}")).json()
    assert (old["execution_count"], old["success_count"]) == (1, 1)
    current = await client.post(f"/v1/procedures/{v2['id']}/executions", json={"success": True})
    assert current.json()["execution_count"] == 1


async def test_version_chain_lists_every_version_in_order(client):
    v1 = await _procedure(client)
    v2 = await post(client, f"/v1/procedures/{v1['id']}/versions", steps=DEPLOY_STEPS[:2])
    v3 = await post(
        client, f"/v1/procedures/{v2['id']}/versions", steps=DEPLOY_STEPS[:1], status="active"
    )
    chain = (await client.get(f"/v1/procedures/{v1['id']}/versions")).json()
    assert [(p["id"], p["version"], p["superseded_by"]) for p in chain] == [
        (v1["id"], 1, v2["id"]),
        (v2["id"], 2, v3["id"]),
        (v3["id"], 3, None),
    ]
    listed = (await client.get("/v1/procedures")).json()["items"]
    assert [p["id"] for p in listed] == [v3["id"]]
    everything = (await client.get("/v1/procedures", params={"include_superseded": "true"})).json()[
        "items"
    ]
    assert len(everything) == 3


async def test_only_the_current_version_can_be_superseded(client):
    v1 = await _procedure(client)
    await post(client, f"/v1/procedures/{v1['id']}/versions", steps=DEPLOY_STEPS)
    again = await client.post(f"/v1/procedures/{v1['id']}/versions", json={"steps": DEPLOY_STEPS})
    assert again.status_code == 409
    revive = await client.patch(f"/v1/procedures/{v1['id']}", json={"status": "active"})
    assert revive.status_code == 409


async def test_concurrent_versions_of_one_procedure_make_one_successor(client):
    v1 = await _procedure(client)
    responses = await asyncio.gather(
        *(
            client.post(f"/v1/procedures/{v1['id']}/versions", json={"steps": DEPLOY_STEPS})
            for _ in range(3)
        )
    )
    assert sorted(r.status_code for r in responses) == [201, 409, 409]
    chain = (await client.get(f"/v1/procedures/{v1['id']}/versions")).json()
    assert [p["version"] for p in chain] == [1, 2]


async def test_a_name_is_free_again_only_for_a_new_agent(client):
    v1 = await _procedure(client)
    await post(client, f"/v1/procedures/{v1['id']}/versions", steps=DEPLOY_STEPS)
    again = await client.post(
        "/v1/procedures", json={"agent_id": "ops", "name": "deploy service", "steps": DEPLOY_STEPS}
    )
    assert again.status_code == 409


async def test_search_finds_procedures_by_meaning_and_words(client):
    deploy = await _procedure(client)
    await _procedure(
        client,
        "brew coffee",
        description="Make a pot of filter coffee.",
        steps=[{"step": 1, "action": "grind_beans"}, {"step": 2, "action": "boil_water"}],
    )
    for mode in ("hybrid", "semantic", "keyword"):
        response = await client.post(
            "/v1/procedures/search",
            json={"query": "ship the service to staging", "mode": mode, "limit": 1},
        )
        assert response.status_code == 200
        body = response.json()
        assert body["mode"] == mode
        assert [hit["id"] for hit in body["results"]] == [deploy["id"]], mode
    hybrid = (
        await client.post("/v1/procedures/search", json={"query": "deploy to staging"})
    ).json()["results"][0]
    assert (hybrid["semantic_rank"], hybrid["keyword_rank"]) == (1, 1)
    # Procedures hold no sessions, whose signals the learned stage reads: RRF fuses them.
    assert set(hybrid["contributions"]) == {"semantic", "keyword", "time"}
    assert hybrid["fused_score"] == pytest.approx(hybrid["rrf_score"]) == 2 / 61


async def test_search_filters_by_agent_status_and_version(client):
    v1 = await _procedure(client)
    v2 = await post(
        client, f"/v1/procedures/{v1['id']}/versions", steps=DEPLOY_STEPS, status="active"
    )
    await _procedure(client, agent_id="other-agent")

    async def ids(**filters):
        response = await client.post(
            "/v1/procedures/search", json={"query": "deploy service", **filters}
        )
        return sorted(hit["id"] for hit in response.json()["results"])

    assert await ids(agent_id="ops") == [v2["id"]]
    assert await ids(agent_id="ops", include_superseded=True) == sorted([v1["id"], v2["id"]])
    assert await ids(agent_id="ops", status="draft") == []


async def test_bad_search_is_a_422_naming_the_field(client):
    response = await client.post("/v1/procedures/search", json={"query": "x", "mode": "fuzzy"})
    assert response.status_code == 422
    assert _field(response) == {"body.mode"}


async def test_another_tenants_procedure_is_not_found(client, tenant_client):
    stored = await _procedure(client)
    other = await tenant_client("other")
    assert (await other.get(f"/v1/procedures/{stored['id']}")).status_code == 404
    assert (
        await other.post(f"/v1/procedures/{stored['id']}/executions", json={"success": True})
    ).status_code == 404
    found = (await other.post("/v1/procedures/search", json={"query": "deploy"})).json()
    assert found["results"] == []
    assert (await client.get(f"/v1/procedures/{stored['id']}")).json()["execution_count"] == 0
