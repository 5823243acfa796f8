"""Input: normalised fact keys, identical facts confirmed, invisible content refused."""

import pytest

from tests.support.factories import store_fact


async def _active(sql):
    return await sql("SELECT subject, predicate, content FROM facts WHERE validity = 'active'")


async def test_subject_differing_only_by_case_supersedes(client, sql):
    first = await store_fact(client, "Alice", "lives_in", "Alice lives in Boston")
    second = await store_fact(client, "alice", "lives_in", "Alice lives in Denver")
    assert second["supersedes_id"] == first["id"]
    assert second["subject"] == "alice"
    assert await _active(sql) == [
        {"subject": "alice", "predicate": "lives_in", "content": "Alice lives in Denver"}
    ]


async def test_key_ignores_spacing_width_and_zero_width_characters(client, sql):
    await store_fact(client, "Mary Ann", "Lives In", "one")
    second = await store_fact(client, "  ＭＡＲＹ\u200b   ann ", "lives  in", "two")
    assert second["supersedes_id"] is not None
    assert [row["content"] for row in await _active(sql)] == ["two"]


async def test_subject_keeps_its_original_spelling_for_display(client):
    fact = await store_fact(client, "McDonald", "Works_At", "x")
    assert (fact["subject"], fact["predicate"]) == ("McDonald", "Works_At")


async def test_listing_by_subject_matches_the_normalised_key(client):
    fact = await store_fact(client, "Alice", "lives_in", "Boston")
    listed = (await client.get("/v1/facts", params={"subject": "ALICE"})).json()["items"]
    assert [f["id"] for f in listed] == [fact["id"]]


async def test_identical_active_fact_is_confirmed_not_superseded(client, sql):
    first = await store_fact(client, "Alice", "lives_in", "Alice lives in Boston")
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '30 days', fading_since = now()"
    )
    response = await client.post(
        "/v1/facts",
        json={"subject": "alice", "predicate": "lives_in", "content": "Alice lives in Boston"},
    )
    assert response.status_code == 200
    again = response.json()
    assert again["id"] == first["id"]
    assert (again["validity"], again["fading"], again["subject"]) == ("active", False, "Alice")
    assert again["effective_confidence"] == pytest.approx(1.0, abs=1e-5)
    [count] = await sql("SELECT count(*) AS n FROM facts")
    assert count["n"] == 1
    events = await sql("SELECT event_type FROM memory_events ORDER BY created_at")
    assert [e["event_type"] for e in events] == ["fact_created", "fact_confirmed"]


@pytest.mark.parametrize(
    "content", ["\u200b\u200c\u200d", "\ufeff \u2060", "\u00ad\u3000", "\u200b\n\t\u200e"]
)
async def test_content_blank_after_normalisation_is_422(client, content):
    response = await client.post(
        "/v1/facts", json={"subject": "Alice", "predicate": "p", "content": content}
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["body.content"]


async def test_invisible_episode_and_rule_content_is_422(client):
    for path, body in (("/v1/episodes", {"butler": "chat"}), ("/v1/rules", {})):
        response = await client.post(path, json={**body, "content": "\u200b\u2063"})
        assert response.status_code == 422, path
        assert response.json()["errors"][0]["field"] == "body.content"


async def test_invisible_subject_is_422(client):
    response = await client.post(
        "/v1/facts", json={"subject": "\u200b", "predicate": "p", "content": "c"}
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.subject"


async def test_invisible_tag_is_422(client):
    for path, body in (
        ("/v1/facts", {"subject": "A", "predicate": "p", "content": "c"}),
        ("/v1/rules", {"content": "c"}),
    ):
        response = await client.post(path, json={**body, "tags": ["ok", "\u200b\ufeff"]})
        assert response.status_code == 422, path
        assert response.json()["errors"][0]["field"] == "body.tags.1"


async def test_invisible_harmful_reason_is_422(client):
    rule = (await client.post("/v1/rules", json={"content": "Be brief"})).json()
    response = await client.post(f"/v1/rules/{rule['id']}/harmful", json={"reason": "\u200b\u2060"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.reason"
