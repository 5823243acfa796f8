"""Graph-aware retrieval: typed entity links with strengths boost memories near the query's
entities, and each hit explains its path."""

import pytest

from tests.support.factories import create_entity, store_episode, store_fact
from tests.support.http import post

QUERY = "coffee machine in the office kitchen"


async def link(client, source, target, relation, strength=1.0):
    return await post(
        client,
        "/v1/links",
        source_type=source[0],
        source_id=source[1]["id"],
        target_type=target[0],
        target_id=target[1]["id"],
        relation=relation,
        strength=strength,
    )


async def search(client, query, **fields):
    response = await client.post("/v1/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    return response.json()["results"]


@pytest.fixture
async def small_graph(client):
    """Ann works at Acme (strength 0.8); a fact anchored on Acme; an unrelated closer fact."""
    ann = await create_entity(client, "Ann")
    acme = await create_entity(client, "Acme", "organization")
    await link(client, ("entity", ann), ("entity", acme), "works_at", 0.8)
    moving = await store_fact(
        client,
        "Acme",
        "moves_office",
        "Acme moves to a new building in March",
        entity_id=acme["id"],
    )
    kitchen = await store_fact(
        client, "office", "kitchen", "The office kitchen gets a new coffee machine"
    )
    return {"ann": ann, "acme": acme, "moving": moving, "kitchen": kitchen}


async def test_memories_near_the_query_entity_rank_higher_and_say_why(client, small_graph):
    plain = await search(client, QUERY, types=["fact"])
    assert plain[0]["id"] == small_graph["kitchen"]["id"]

    boosted = await search(
        client, QUERY, types=["fact"], entities=[small_graph["ann"]["id"]], fusion="rrf"
    )

    first, second = boosted
    assert first["id"] == small_graph["moving"]["id"]
    assert first["graph"] == {
        "entity_id": small_graph["ann"]["id"],
        "hops": 2,
        "strength": pytest.approx(0.8),
        "score": pytest.approx(0.4),
    }
    assert first["contributions"]["graph"] == pytest.approx(1 / 61)
    assert second["graph"] is None and second["contributions"]["graph"] == 0.0


async def test_graph_hops_bounds_the_boost(client, small_graph):
    results = await search(
        client, QUERY, types=["fact"], graph_hops=1, entities=[small_graph["ann"]["id"]]
    )

    assert all(hit["graph"] is None for hit in results)
    assert results[0]["id"] == small_graph["kitchen"]["id"]


async def test_stronger_and_shorter_paths_score_higher(client, small_graph):
    ann = small_graph["ann"]
    close = await store_episode(client, "Ann said the printer jams every morning")
    weak = await store_episode(client, "Someone mentioned the printer in passing")
    await link(client, ("entity", ann), ("episode", close), "mentions", 1.0)
    await link(client, ("entity", ann), ("episode", weak), "mentions", 0.3)

    results = await search(
        client, "printer", types=["episode"], entities=[ann["id"]], fusion="weighted"
    )

    by_id = {hit["id"]: hit for hit in results}
    assert by_id[close["id"]]["graph"]["score"] == pytest.approx(1.0)
    assert by_id[weak["id"]]["graph"]["score"] == pytest.approx(0.3)
    assert by_id[close["id"]]["contributions"]["graph"] == pytest.approx(0.2)
    assert by_id[weak["id"]]["contributions"]["graph"] == pytest.approx(0.2 * 0.3)


async def test_recall_adds_the_graph_score_to_the_composite(client, small_graph):
    body = {"topic": "changes at the office"}
    plain = {
        hit["id"]: hit for hit in (await client.post("/v1/recall", json=body)).json()["results"]
    }
    response = await client.post(
        "/v1/recall", json={**body, "entities": [small_graph["ann"]["id"]]}
    )
    assert response.status_code == 200, response.text
    boosted = {hit["id"]: hit for hit in response.json()["results"]}

    moving = small_graph["moving"]["id"]
    assert boosted[moving]["graph"]["score"] == pytest.approx(0.4)
    assert boosted[moving]["relevance"] == pytest.approx(plain[moving]["relevance"])
    assert boosted[moving]["composite_score"] == pytest.approx(
        plain[moving]["composite_score"] + 0.2 * 0.4, abs=1e-3
    )


async def test_a_graph_never_shows_another_tenants_or_hidden_memories(
    client, small_graph, tenant_client
):
    other = await tenant_client("other")
    retracted = await store_fact(
        client, "Acme", "ceo", "Acme's CEO is Bo", entity_id=small_graph["acme"]["id"]
    )
    await client.post(f"/v1/facts/{retracted['id']}/forget", json={})

    results = await search(client, "Acme", types=["fact"], entities=[small_graph["ann"]["id"]])
    assert retracted["id"] not in {hit["id"] for hit in results}
    response = await other.post(
        "/v1/search", json={"query": "Acme", "entities": [small_graph["ann"]["id"]]}
    )
    assert response.status_code == 200
    assert all(hit["graph"] is None for hit in response.json()["results"])


async def test_entity_links_validate_their_ends_and_strength(client, small_graph, tenant_client):
    ann, acme = small_graph["ann"], small_graph["acme"]
    response = await client.post(
        "/v1/links",
        json={
            "source_type": "entity",
            "source_id": ann["id"],
            "target_type": "entity",
            "target_id": acme["id"],
            "relation": "knows",
            "strength": 1.5,
        },
    )
    assert response.status_code == 422 and "strength" in response.text
    other = await tenant_client("other")
    theirs = await create_entity(other, "Cy")
    response = await client.post(
        "/v1/links",
        json={
            "source_type": "entity",
            "source_id": ann["id"],
            "target_type": "entity",
            "target_id": theirs["id"],
            "relation": "knows",
        },
    )
    assert response.status_code == 422 and "target_id" in response.text


async def test_deleting_an_entity_deletes_its_links(client, small_graph, sql):
    response = await client.delete(f"/v1/entities/{small_graph['ann']['id']}")
    assert response.status_code == 204

    rows = await sql(
        "SELECT count(*) AS n FROM memory_links WHERE (source_type = 'entity' "
        "AND source_id = :ann) OR (target_type = 'entity' AND target_id = :ann)",
        ann=small_graph["ann"]["id"],
    )
    assert rows[0]["n"] == 0


async def test_too_many_entities_is_a_422_naming_the_field(client):
    response = await client.post(
        "/v1/search", json={"query": "x", "entities": ["00000000-0000-4000-8000-000000000001"] * 11}
    )
    assert response.status_code == 422 and "entities" in response.text


@pytest.mark.parametrize("mode", ["semantic", "keyword"])
async def test_entities_outside_hybrid_mode_is_a_422_naming_the_field(client, small_graph, mode):
    response = await client.post(
        "/v1/search", json={"query": QUERY, "mode": mode, "entities": [small_graph["ann"]["id"]]}
    )
    assert response.status_code == 422
    assert [error["field"] for error in response.json()["errors"]] == ["entities"]


async def test_learned_fusion_fuses_its_order_with_the_graph_list(client, small_graph):
    # Two turns of one session: the pool has sessions, so the learned stage orders it.
    for turn in ("Bob: the weekend hike was fun", "Carl: and the weather held up"):
        await store_episode(client, turn, session_id="s1")

    boosted = await search(client, QUERY, entities=[small_graph["ann"]["id"]])

    by_id = {hit["id"]: hit for hit in boosted}
    assert boosted[0]["id"] == small_graph["moving"]["id"]
    assert boosted[0]["contributions"]["graph"] == pytest.approx(1 / 61)
    # Not near the entity: its graph rank counts as limit + 1 (the default limit is 20).
    assert by_id[small_graph["kitchen"]["id"]]["contributions"]["graph"] == pytest.approx(1 / 81)
    for hit in boosted:
        assert set(hit["contributions"]) == {"learned", "graph"}
        assert sum(hit["contributions"].values()) == pytest.approx(hit["fused_score"])


async def test_facts_alone_are_fused_with_the_graph_list_by_rrf(client, small_graph):
    boosted = await search(client, QUERY, types=["fact"], entities=[small_graph["ann"]["id"]])

    assert boosted[0]["id"] == small_graph["moving"]["id"]
    for hit in boosted:
        assert set(hit["contributions"]) == {"semantic", "keyword", "time", "graph"}
        assert hit["fused_score"] == pytest.approx(hit["rrf_score"])
