"""Links through HTTP say who made them and why, several relations join one pair, procedures,
arcs and runs are ends, and every creation and deletion is an event."""

from tests.support.factories import ref, store_episode, store_fact
from tests.support.http import post
from tests.support.rights import key_id_of


def body(source, target, relation="supports", **fields):
    return {
        "source_type": source[0],
        "source_id": source[1],
        "target_type": target[0],
        "target_id": target[1],
        "relation": relation,
        **fields,
    }


async def two_memories(client):
    fact = ref("fact", await store_fact(client, "Ann", "likes", "Ann likes chess"))
    episode = ref("episode", await store_episode(client, "Ann played chess all evening"))
    return episode, fact


async def test_reasoning_and_created_by_are_stored_and_returned(client):
    episode, fact = await two_memories(client)
    response = await client.post(
        "/v1/links",
        json=body(episode, fact, reasoning="she said so herself", created_by="agent:cultivator"),
    )
    assert response.status_code == 201, response.text
    assert response.json()["reasoning"] == "she said so herself"
    assert response.json()["created_by"] == "agent:cultivator"
    [listed] = (
        await client.get("/v1/links", params={"memory_type": "fact", "memory_id": fact[1]})
    ).json()["items"]
    assert (listed["reasoning"], listed["created_by"]) == (
        "she said so herself",
        "agent:cultivator",
    )


async def test_created_by_defaults_to_the_callers_key(client, sql):
    episode, fact = await two_memories(client)
    created = await post(client, "/v1/links", **body(episode, fact))
    assert created["created_by"] == f"key:{await key_id_of(sql, 'default')}"


async def test_blank_created_by_is_422_naming_it(client):
    episode, fact = await two_memories(client)
    response = await client.post("/v1/links", json=body(episode, fact, created_by=" "))
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "body.created_by" in {error["field"] for error in response.json()["errors"]}


async def test_supports_and_contradicts_join_one_pair(client):
    episode, fact = await two_memories(client)
    await post(client, "/v1/links", **body(episode, fact, "supports"))
    await post(client, "/v1/links", **body(episode, fact, "contradicts"))
    items = (
        await client.get("/v1/links", params={"memory_type": "episode", "memory_id": episode[1]})
    ).json()["items"]
    assert sorted(item["relation"] for item in items) == ["contradicts", "supports"]


async def test_delete_with_a_relation_keeps_the_pairs_other_relations(client):
    episode, fact = await two_memories(client)
    await post(client, "/v1/links", **body(episode, fact, "supports"))
    await post(client, "/v1/links", **body(episode, fact, "derived_from"))
    key = {
        "source_type": "episode",
        "source_id": episode[1],
        "target_type": "fact",
        "target_id": fact[1],
    }
    assert (
        await client.delete("/v1/links", params={**key, "relation": "supports"})
    ).status_code == 204
    items = (
        await client.get("/v1/links", params={"memory_type": "episode", "memory_id": episode[1]})
    ).json()["items"]
    assert [item["relation"] for item in items] == ["derived_from"]
    assert (
        await client.delete("/v1/links", params={**key, "relation": "supports"})
    ).status_code == 404


async def test_procedures_arcs_and_runs_are_link_ends(client):
    fact = ref("fact", await store_fact(client, "Ann", "deploys", "Ann deploys on Fridays"))
    procedure = ref(
        "procedure",
        await post(
            client,
            "/v1/procedures",
            agent_id="ops",
            name="deploy",
            steps=[{"step": 1, "action": "ship"}],
        ),
    )
    arc = ref(
        "arc", await post(client, "/v1/arcs", title="Friday deploys", arc_type="project_phase")
    )
    run = ref("run", await post(client, "/v1/runs", task_id="deploy-42"))
    for source, target in ((run, fact), (fact, procedure), (arc, run), (procedure, arc)):
        await post(client, "/v1/links", **body(source, target, "related_to"))
    items = (
        await client.get("/v1/links", params={"memory_type": "run", "memory_id": run[1]})
    ).json()["items"]
    assert {(item["source_type"], item["target_type"]) for item in items} == {
        ("run", "fact"),
        ("arc", "run"),
    }


async def test_creating_and_deleting_a_link_write_events(client, sql):
    episode, fact = await two_memories(client)
    await post(client, "/v1/links", **body(episode, fact, reasoning="seen"))
    response = await client.delete(
        "/v1/links",
        params={
            "source_type": "episode",
            "source_id": episode[1],
            "target_type": "fact",
            "target_id": fact[1],
        },
    )
    assert response.status_code == 204
    key = f"key:{await key_id_of(sql, 'default')}"
    for event_type in ("link_created", "link_deleted"):
        [event] = (await client.get("/v1/events", params={"event_type": event_type})).json()[
            "items"
        ]
        assert event["actor"] == key
        assert {
            k: event["payload"][k] for k in ("source_id", "target_id", "relation", "reasoning")
        } == {
            "source_id": episode[1],
            "target_id": fact[1],
            "relation": "supports",
            "reasoning": "seen",
        }
