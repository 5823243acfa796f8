"""NUL characters in stored text are dropped on the way in, as they are in queries."""

import uuid

import pytest


async def test_nul_is_dropped_from_every_text_field_of_each_memory_type(client, sql):
    episode = await client.post(
        "/v1/episodes",
        json={"content": "Ann\x00 moved to Lyon", "butler": "ch\x00at", "session_id": "s\x001"},
    )
    fact = await client.post(
        "/v1/facts",
        json={
            "subject": "A\x00nn",
            "predicate": "ci\x00ty",
            "content": "Ann lives\x00 in Lyon",
            "scope": "tra\x00vel",
            "tags": ["ho\x00me"],
            "source_butler": "ch\x00at",
        },
    )
    rule = await client.post(
        "/v1/rules",
        json={"content": "Greet\x00 Ann in French", "scope": "tra\x00vel", "tags": ["to\x00ne"]},
    )
    entity = await client.post(
        "/v1/entities",
        json={"canonical_name": "A\x00nn", "entity_type": "person", "aliases": ["An\x00nie"]},
    )
    for response in (episode, fact, rule, entity):
        assert response.status_code == 201, response.text
    assert (episode.json()["content"], episode.json()["butler"], episode.json()["session_id"]) == (
        "Ann moved to Lyon",
        "chat",
        "s1",
    )
    assert {
        k: fact.json()[k]
        for k in ("subject", "predicate", "content", "scope", "tags", "source_butler")
    } == {
        "subject": "Ann",
        "predicate": "city",
        "content": "Ann lives in Lyon",
        "scope": "travel",
        "tags": ["home"],
        "source_butler": "chat",
    }
    assert (rule.json()["content"], rule.json()["scope"], rule.json()["tags"]) == (
        "Greet Ann in French",
        "travel",
        ["tone"],
    )
    assert (entity.json()["canonical_name"], entity.json()["aliases"]) == ("Ann", ["Annie"])
    [row] = await sql("SELECT content FROM facts WHERE id = :id", id=uuid.UUID(fact.json()["id"]))
    assert row["content"] == "Ann lives in Lyon"


async def test_a_fact_stored_with_nul_keeps_its_key_and_is_found(client):
    first = await client.post(
        "/v1/facts", json={"subject": "Ann", "predicate": "city", "content": "Ann lives in Paris"}
    )
    second = await client.post(
        "/v1/facts",
        json={"subject": "An\x00n", "predicate": "city", "content": "Ann lives in Ly\x00on"},
    )
    assert second.json()["supersedes_id"] == first.json()["id"]
    found = await client.post("/v1/search", json={"query": "Lyon", "mode": "keyword"})
    assert [hit["content"] for hit in found.json()["results"]] == ["Ann lives in Lyon"]


@pytest.mark.parametrize("content", ["\x00", "\x00 \x00"])
async def test_content_of_nul_alone_is_422_naming_the_field(client, sql, content):
    response = await client.post("/v1/episodes", json={"content": content, "butler": "chat"})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert "body.content" in [e["field"] for e in response.json()["errors"]]
    [row] = await sql("SELECT count(*) AS n FROM episodes")
    assert row["n"] == 0
