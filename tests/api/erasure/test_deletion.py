"""Hard DELETE of episodes, facts, rules and entities: the row and its trace go, a tombstone
stays."""

from tests.support.factories import create_entity, store_episode, store_fact, store_rule
from tests.support.http import post
from tests.support.rights import key_id_of


async def _events_about(sql, memory_id):
    rows = await sql(
        "SELECT event_type FROM memory_events "
        "WHERE payload ->> 'memory_id' = :id ORDER BY created_at",
        id=memory_id,
    )
    return [row["event_type"] for row in rows]


async def test_deleted_episode_is_gone_with_its_links_postings_and_events(client, sql):
    episode = await store_episode(client, "Ann called from 5550142")
    fact = await store_fact(client, content="Ann has a phone")
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=fact["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )

    response = await client.delete(f"/v1/episodes/{episode['id']}")

    assert response.status_code == 204
    assert (await client.get(f"/v1/episodes/{episode['id']}")).status_code == 404
    assert await sql("SELECT 1 FROM memory_links") == []
    assert (
        await sql(
            "SELECT 1 FROM keyword_postings WHERE memory_id = CAST(:id AS uuid)", id=episode["id"]
        )
        == []
    )
    assert await _events_about(sql, episode["id"]) == ["episode_deleted"]
    assert (await client.get(f"/v1/facts/{fact['id']}")).status_code == 200


async def test_episode_leaves_the_consolidation_events_that_list_it(client, sql):
    gone = await store_episode(client, "first")
    kept = await store_episode(client, "second")
    await sql(
        "INSERT INTO memory_events (event_type, tenant_id, payload) VALUES "
        "('episodes_consolidation_failed', 'default', jsonb_build_object("
        "'episode_ids', jsonb_build_array(CAST(:a AS text), CAST(:b AS text)), "
        "'error', 'the model quoted: first'))",
        a=gone["id"],
        b=kept["id"],
    )

    assert (await client.delete(f"/v1/episodes/{gone['id']}")).status_code == 204

    [event] = await sql(
        "SELECT payload FROM memory_events WHERE event_type = 'episodes_consolidation_failed'"
    )
    assert event["payload"] == {"episode_ids": [kept["id"]]}


async def test_deleting_a_fact_deletes_every_version_of_it(client, sql):
    old = await store_fact(client, content="Ann lives in Oslo")
    new = await store_fact(client, content="Ann lives in Bergen")
    other = await store_fact(client, subject="Bob", content="Bob lives in Oslo")

    assert (await client.delete(f"/v1/facts/{old['id']}")).status_code == 204

    for gone in (old, new):
        assert (await client.get(f"/v1/facts/{gone['id']}")).status_code == 404
    assert (await client.get(f"/v1/facts/{other['id']}")).status_code == 200
    [tombstone] = await sql(
        "SELECT payload, actor, CAST(actor_key_id AS text) AS key "
        "FROM memory_events WHERE event_type = 'fact_deleted'"
    )
    assert sorted(tombstone["payload"]["deleted_ids"]) == sorted([old["id"], new["id"]])
    assert tombstone["key"] == await key_id_of(sql, "default")
    assert tombstone["actor"] == f"key:{tombstone['key']}"


async def test_deleting_a_rule_deletes_its_feedback(client, sql):
    rule = await store_rule(client)
    response = await client.post(
        f"/v1/rules/{rule['id']}/harmful", json={"reason": "leaked 5550142"}
    )
    assert response.status_code == 200

    assert (await client.delete(f"/v1/rules/{rule['id']}")).status_code == 204

    assert await sql("SELECT 1 FROM rule_applications") == []
    assert await _events_about(sql, rule["id"]) == ["rule_deleted"]
    assert (await client.get(f"/v1/rules/{rule['id']}")).status_code == 404


async def test_deleting_an_unknown_memory_is_404(client):
    unknown = "00000000-0000-4000-8000-000000000000"
    for path in ("episodes", "facts", "rules", "entities"):
        response = await client.delete(f"/v1/{path}/{unknown}")
        assert response.status_code == 404, path
        assert response.headers["content-type"] == "application/problem+json"


async def test_deleting_an_entity_detaches_its_facts_by_default(client):
    entity = await create_entity(client, "Ann")
    fact = await store_fact(client, subject="Ann", entity_id=entity["id"])

    assert (await client.delete(f"/v1/entities/{entity['id']}")).status_code == 204

    assert (await client.get(f"/v1/entities/{entity['id']}")).status_code == 404
    kept = (await client.get(f"/v1/facts/{fact['id']}")).json()
    assert kept["entity_id"] is None


async def test_deleting_an_entity_with_facts_delete_takes_their_history(client):
    entity = await create_entity(client, "Ann")
    old = await store_fact(client, subject="Ann", entity_id=entity["id"], content="v1")
    new = await store_fact(client, subject="Ann", entity_id=entity["id"], content="v2")

    response = await client.delete(f"/v1/entities/{entity['id']}", params={"facts": "delete"})

    assert response.status_code == 204
    for gone in (old, new):
        assert (await client.get(f"/v1/facts/{gone['id']}")).status_code == 404


async def test_deleting_an_entity_takes_the_entities_merged_into_it(client):
    target = await create_entity(client, "Ann")
    source = await create_entity(client, "Annie")
    merged = await client.post(
        f"/v1/entities/{target['id']}/merge", json={"source_id": source["id"]}
    )
    assert merged.status_code == 200

    assert (await client.delete(f"/v1/entities/{target['id']}")).status_code == 204

    assert (await client.get(f"/v1/entities/{source['id']}")).status_code == 404


async def test_detaching_onto_an_unanchored_active_key_is_a_conflict(client):
    entity = await create_entity(client, "Ann")
    anchored = await store_fact(client, subject="Ann", entity_id=entity["id"])
    await store_fact(client, subject="Ann")

    response = await client.delete(f"/v1/entities/{entity['id']}")

    assert response.status_code == 409
    assert response.json()["errors"][0]["field"] == "facts"
    assert (await client.get(f"/v1/facts/{anchored['id']}")).json()["entity_id"] == entity["id"]


async def test_an_unknown_facts_mode_is_422(client):
    entity = await create_entity(client, "Ann")
    response = await client.delete(f"/v1/entities/{entity['id']}", params={"facts": "keep"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.facts"


async def test_patching_metadata_with_null_removes_the_key(client):
    entity = await create_entity(
        client, "Ann", metadata={"phone": "5550142", "city": "Oslo", "tags": {"a": 1, "b": 2}}
    )
    response = await client.patch(
        f"/v1/entities/{entity['id']}", json={"metadata": {"phone": None, "tags": {"b": None}}}
    )
    assert response.status_code == 200
    assert response.json()["metadata"] == {"city": "Oslo", "tags": {"a": 1}}


async def test_a_deleted_memory_leaves_the_arcs_procedures_and_working_memories_naming_it(client):
    gone = await store_episode(client, "Ann called")
    kept = await store_episode(client, "Bob called")
    events = [
        {"memory_type": "episode", "memory_id": episode["id"], "description": "a call"}
        for episode in (gone, kept)
    ]
    arc = await post(
        client, "/v1/arcs", title="Calls", arc_type="interaction_arc", key_events=events
    )
    refs = [{"memory_type": "episode", "memory_id": episode["id"]} for episode in (gone, kept)]
    procedure = await post(
        client,
        "/v1/procedures",
        agent_id="a",
        name="call_back",
        steps=[{"step": 1, "action": "dial"}],
        learned_from=refs,
    )
    put = await client.put(
        "/v1/working-memory/a/s", json={"retrieved_memory_ids": [gone["id"], kept["id"]]}
    )
    assert put.status_code == 201

    assert (await client.delete(f"/v1/episodes/{gone['id']}")).status_code == 204

    arc = (await client.get(f"/v1/arcs/{arc['id']}")).json()
    assert [event["memory_id"] for event in arc["key_events"]] == [kept["id"]]
    procedure = (await client.get(f"/v1/procedures/{procedure['id']}")).json()
    assert [ref["memory_id"] for ref in procedure["learned_from"]] == [kept["id"]]
    memory = await client.get("/v1/working-memory/a/s")
    assert memory.json()["retrieved_memory_ids"] == [kept["id"]]
    assert memory.headers["etag"] != put.headers["etag"]


async def test_a_deleted_entity_leaves_the_arcs_naming_it(client):
    gone = await create_entity(client, "Ann")
    kept = await create_entity(client, "Bob")
    arc = await post(
        client,
        "/v1/arcs",
        title="Ann and Bob",
        arc_type="interaction_arc",
        entity_ids=[gone["id"], kept["id"]],
    )

    assert (await client.delete(f"/v1/entities/{gone['id']}")).status_code == 204

    assert (await client.get(f"/v1/arcs/{arc['id']}")).json()["entity_ids"] == [kept["id"]]
