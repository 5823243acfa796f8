"""Entities through HTTP: create, get, update semantics, listing, facts of an entity."""

import uuid
from datetime import datetime

from tests.support.factories import create_entity, store_fact


async def test_created_entity_has_its_fields_and_defaults(client):
    entity = await create_entity(client, aliases=["Caro"], metadata={"team": "blue"})
    assert entity["canonical_name"] == "Caroline"
    assert entity["entity_type"] == "person"
    assert entity["aliases"] == ["Caro"]
    assert entity["metadata"] == {"team": "blue"}
    assert uuid.UUID(entity["id"])
    assert datetime.fromisoformat(entity["created_at"]).tzinfo is not None
    assert entity["updated_at"] == entity["created_at"]


async def test_entity_defaults_to_no_aliases_and_empty_metadata(client):
    entity = await create_entity(client)
    assert entity["aliases"] == [] and entity["metadata"] == {}


async def test_duplicate_name_and_type_is_409(client):
    await create_entity(client)
    response = await client.post(
        "/v1/entities", json={"canonical_name": "Caroline", "entity_type": "person"}
    )
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert "already exists" in response.json()["detail"]


async def test_same_name_with_another_type_is_allowed(client):
    await create_entity(client, "Paris", "place")
    other = await create_entity(client, "Paris", "person")
    assert other["entity_type"] == "person"


async def test_invalid_entity_type_is_422_listing_valid_types(client):
    response = await client.post(
        "/v1/entities", json={"canonical_name": "X", "entity_type": "animal"}
    )
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body.entity_type"
    for valid in ("person", "organization", "place", "other"):
        assert valid in error["message"]


async def test_merged_into_metadata_key_is_reserved(client):
    response = await client.post(
        "/v1/entities",
        json={"canonical_name": "X", "entity_type": "other", "metadata": {"merged_into": "y"}},
    )
    assert response.status_code == 422


async def test_get_entity_returns_it_and_unknown_is_404(client):
    entity = await create_entity(client)
    assert (await client.get(f"/v1/entities/{entity['id']}")).json() == entity
    missing = await client.get(f"/v1/entities/{uuid.uuid4()}")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"


async def test_update_replaces_name_replaces_all_aliases_and_merges_metadata(client, sql):
    entity = await create_entity(
        client, aliases=["Caro", "C."], metadata={"team": "blue", "age": 30}
    )
    await sql(
        "UPDATE entities SET updated_at = '2020-01-01T00:00:00Z' WHERE id = :id",
        id=uuid.UUID(entity["id"]),
    )
    response = await client.patch(
        f"/v1/entities/{entity['id']}",
        json={
            "canonical_name": "Caroline Smith",
            "aliases": ["Carrie"],
            "metadata": {"team": "red", "city": "Boston"},
        },
    )
    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["canonical_name"] == "Caroline Smith"
    assert updated["aliases"] == ["Carrie"]
    assert updated["metadata"] == {"team": "red", "age": 30, "city": "Boston"}
    assert datetime.fromisoformat(updated["updated_at"]).year > 2020
    assert updated["created_at"] == entity["created_at"]


async def test_update_without_fields_keeps_values_and_bumps_updated_at(client, sql):
    entity = await create_entity(client, aliases=["Caro"])
    await sql(
        "UPDATE entities SET updated_at = '2020-01-01T00:00:00Z' WHERE id = :id",
        id=uuid.UUID(entity["id"]),
    )
    updated = (await client.patch(f"/v1/entities/{entity['id']}", json={})).json()
    assert updated["canonical_name"] == "Caroline" and updated["aliases"] == ["Caro"]
    assert datetime.fromisoformat(updated["updated_at"]).year > 2020


async def test_update_to_a_taken_name_is_409(client):
    await create_entity(client, "Bob")
    entity = await create_entity(client, "Robert")
    response = await client.patch(f"/v1/entities/{entity['id']}", json={"canonical_name": "Bob"})
    assert response.status_code == 409


async def test_update_of_unknown_entity_is_404(client):
    response = await client.patch(f"/v1/entities/{uuid.uuid4()}", json={"aliases": []})
    assert response.status_code == 404


async def test_list_filters_by_type_and_literal_name_substring(client):
    await create_entity(client, "Acme_Corp", "organization")
    await create_entity(client, "AcmeXCorp", "organization")
    await create_entity(client, "Acme_Corp", "place")
    response = await client.get(
        "/v1/entities", params={"entity_type": "organization", "name": "me_c"}
    )
    assert response.status_code == 200
    names = [(e["canonical_name"], e["entity_type"]) for e in response.json()["items"]]
    assert names == [("Acme_Corp", "organization")]


async def test_list_paginates_newest_first(client):
    ids = [(await create_entity(client, f"E{i}", "other"))["id"] for i in range(3)]
    first = (await client.get("/v1/entities", params={"limit": 2})).json()
    assert [e["id"] for e in first["items"]] == [ids[2], ids[1]]
    second = (
        await client.get("/v1/entities", params={"limit": 2, "cursor": first["next_cursor"]})
    ).json()
    assert [e["id"] for e in second["items"]] == [ids[0]]
    assert second["next_cursor"] is None


async def test_list_hides_merged_entities_unless_asked(client):
    target = await create_entity(client, "Robert")
    source = await create_entity(client, "Bob")
    await client.post(f"/v1/entities/{target['id']}/merge", json={"source_id": source["id"]})
    listed = (await client.get("/v1/entities")).json()["items"]
    assert [e["id"] for e in listed] == [target["id"]]
    everything = (await client.get("/v1/entities", params={"include_merged": True})).json()
    assert {e["id"] for e in everything["items"]} == {target["id"], source["id"]}


async def test_entity_facts_lists_active_facts_anchored_to_it(client):
    entity = await create_entity(client)
    other = await create_entity(client, "Dave")
    old = await store_fact(client, content="lives in Austin", entity_id=entity["id"])
    new = await store_fact(client, content="lives in Boston", entity_id=entity["id"])
    await store_fact(client, predicate="works_at", content="works at Acme", entity_id=entity["id"])
    await store_fact(client, entity_id=other["id"])
    active = (await client.get(f"/v1/entities/{entity['id']}/facts")).json()["items"]
    assert [f["predicate"] for f in active] == ["works_at", "lives_in"]
    assert new["id"] in {f["id"] for f in active}
    superseded = (
        await client.get(f"/v1/entities/{entity['id']}/facts", params={"validity": "superseded"})
    ).json()["items"]
    assert [f["id"] for f in superseded] == [old["id"]]


async def test_entity_facts_of_unknown_entity_is_404(client):
    response = await client.get(f"/v1/entities/{uuid.uuid4()}/facts")
    assert response.status_code == 404
