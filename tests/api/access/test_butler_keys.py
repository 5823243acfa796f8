"""Keys limited to butlers: what such a key sees, what it may change, and what it may not do."""

import json
from typing import Any

from tests.support.http import post

TENANT = "crew"


async def _seed(owner: Any) -> dict[str, Any]:
    """Memories of the planner, the critic and the global scope, stored with an unlimited key."""
    return {
        "planner_episode": await post(
            owner, "/v1/episodes", content="planner plans the trip", butler="planner"
        ),
        "critic_episode": await post(
            owner, "/v1/episodes", content="critic doubts the trip", butler="critic"
        ),
        "planner_fact": await post(
            owner,
            "/v1/facts",
            subject="trip",
            predicate="day",
            content="the trip is on monday",
            scope="planner",
        ),
        "critic_fact": await post(
            owner,
            "/v1/facts",
            subject="trip",
            predicate="risk",
            content="the trip risks rain",
            scope="critic",
        ),
        "global_fact": await post(
            owner, "/v1/facts", subject="office", predicate="city", content="the office is in Lyon"
        ),
        "critic_rule": await post(
            owner, "/v1/rules", content="always doubt the trip", scope="critic"
        ),
    }


async def test_a_limited_key_sees_its_butlers_and_the_global_memories_only(
    tenant_client, limited_client
):
    owner = await tenant_client(TENANT)
    seeded = await _seed(owner)
    planner = await limited_client(TENANT, ["planner"])

    episodes = (await planner.get("/v1/episodes")).json()["items"]
    assert [e["id"] for e in episodes] == [seeded["planner_episode"]["id"]]
    facts = {f["id"] for f in (await planner.get("/v1/facts")).json()["items"]}
    assert facts == {seeded["planner_fact"]["id"], seeded["global_fact"]["id"]}
    assert (await planner.get("/v1/rules")).json()["items"] == []
    for path in (
        f"/v1/episodes/{seeded['critic_episode']['id']}",
        f"/v1/facts/{seeded['critic_fact']['id']}",
        f"/v1/rules/{seeded['critic_rule']['id']}",
    ):
        response = await planner.get(path)
        assert response.status_code == 404, (path, response.text)
    found = (
        await planner.post(
            "/v1/search", json={"query": "trip", "mode": "hybrid", "min_confidence": 0}
        )
    ).json()["results"]
    assert {r["id"] for r in found} <= {
        seeded["planner_episode"]["id"],
        seeded["planner_fact"]["id"],
        seeded["global_fact"]["id"],
    }
    assert seeded["planner_episode"]["id"] in {r["id"] for r in found}
    # A global memory reads (and counts the reference) like its own.
    shared = await planner.get(f"/v1/facts/{seeded['global_fact']['id']}")
    assert shared.status_code == 200 and shared.json()["reference_count"] == 1, shared.text
    recalled = (
        await planner.post(
            "/v1/recall", json={"topic": "trip risk rain doubt", "min_confidence": 0}
        )
    ).json()
    assert "critic" not in json.dumps(recalled)
    # The unlimited key still sees everything.
    assert len((await owner.get("/v1/episodes")).json()["items"]) == 2


async def test_a_limited_key_writes_only_for_its_butlers(tenant_client, limited_client):
    owner = await tenant_client(TENANT)
    seeded = await _seed(owner)
    planner = await limited_client(TENANT, ["planner", "scout"])

    stored = await planner.post(
        "/v1/episodes", json={"content": "scout saw a hill", "butler": "scout"}
    )
    assert stored.status_code == 201, stored.text
    cases = [
        ("/v1/episodes", {"content": "x", "butler": "critic"}, "butler"),
        (
            "/v1/episodes/batch",
            {
                "items": [
                    {"content": "x", "butler": "planner"},
                    {"content": "y", "butler": "critic"},
                ]
            },
            "items.1.butler",
        ),
        (
            "/v1/facts",
            {"subject": "a", "predicate": "b", "content": "c", "scope": "critic"},
            "scope",
        ),
        ("/v1/facts", {"subject": "a", "predicate": "b", "content": "c"}, "scope"),
        ("/v1/rules", {"content": "never plan", "scope": "critic"}, "scope"),
        (
            "/v1/procedures",
            {"agent_id": "critic", "name": "doubt", "steps": [{"step": 1, "action": "doubt"}]},
            "agent_id",
        ),
        (
            "/v1/ledgers/trip/events",
            {"agent_id": "critic", "kind": "world.observed", "content": "rain", "turn": 1},
            "agent_id",
        ),
        # A ledger's reflections consolidate into the scope of its name.
        (
            "/v1/ledgers/global/events",
            {"agent_id": "planner", "kind": "world.observed", "content": "rain", "turn": 1},
            "ledger_name",
        ),
        (
            "/v1/ledgers/critic/events",
            {"agent_id": "planner", "kind": "world.observed", "content": "rain", "turn": 1},
            "ledger_name",
        ),
        (
            "/v1/ledgers/global/agents/planner/reflections",
            {"belief": "rain", "based_on": ["00000000-0000-4000-8000-000000000000"]},
            "ledger_name",
        ),
        (f"/v1/facts/{seeded['global_fact']['id']}/forget", None, "scope"),
    ]
    for path, body, field in cases:
        response = await planner.post(path, json=body)
        assert response.status_code == 403, (path, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert [e["field"] for e in response.json()["errors"]] == [field], response.text
    refused = await planner.put("/v1/working-memory/critic/s1", json={"scratchpad": {"a": 1}})
    assert refused.status_code == 403 and refused.json()["errors"][0]["field"] == "agent_id"
    # Nothing was half-written: the batch's planner episode is not there either.
    episodes = (await owner.get("/v1/episodes")).json()["items"]
    assert sorted(e["butler"] for e in episodes) == ["critic", "planner", "scout"]
    assert (await owner.get(f"/v1/facts/{seeded['global_fact']['id']}")).json()[
        "validity"
    ] == "active"


async def test_operations_over_every_butler_need_an_unlimited_key(tenant_client, limited_client):
    owner = await tenant_client(TENANT)
    seeded = await _seed(owner)
    entity = await post(owner, "/v1/entities", canonical_name="Lyon", entity_type="place")
    twin = await post(owner, "/v1/entities", canonical_name="Lyon city", entity_type="place")
    planner = await limited_client(TENANT, ["planner"])
    calls = [
        ("POST", "/v1/erasures", {"json": {"butler": "planner"}}),
        ("GET", "/v1/export", {}),
        ("POST", "/v1/import", {"content": b""}),
        ("DELETE", f"/v1/entities/{entity['id']}", {}),
        ("POST", f"/v1/entities/{entity['id']}/merge", {"json": {"source_id": twin["id"]}}),
        ("POST", "/v1/jobs/consolidation", {}),
        ("POST", "/v1/jobs/cleanup", {"json": {"max_entries": 0}}),
        ("POST", "/v1/runs", {"json": {"task_id": "t"}}),
    ]
    for method, path, request in calls:
        response = await planner.request(method, path, **request)
        assert response.status_code == 403, (method, path, response.text)
        assert "limited to planner" in response.json()["detail"]
    assert (await owner.get(f"/v1/episodes/{seeded['critic_episode']['id']}")).status_code == 200
    assert (await owner.get(f"/v1/entities/{entity['id']}")).status_code == 200


async def test_a_link_to_a_hidden_memory_is_not_shown(tenant_client, limited_client):
    owner = await tenant_client(TENANT)
    seeded = await _seed(owner)
    await post(
        owner,
        "/v1/links",
        source_type="fact",
        source_id=seeded["planner_fact"]["id"],
        target_type="fact",
        target_id=seeded["critic_fact"]["id"],
        relation="contradicts",
    )
    planner = await limited_client(TENANT, ["planner"])
    links = await planner.get(
        "/v1/links", params={"memory_type": "fact", "memory_id": seeded["planner_fact"]["id"]}
    )
    assert links.status_code == 200 and seeded["critic_fact"]["id"] not in links.text
    graph = await planner.get(f"/v1/graph/fact/{seeded['planner_fact']['id']}")
    assert graph.status_code == 200 and seeded["critic_fact"]["id"] not in graph.text
    assert (
        seeded["critic_fact"]["id"]
        in (await owner.get(f"/v1/graph/fact/{seeded['planner_fact']['id']}")).text
    )
