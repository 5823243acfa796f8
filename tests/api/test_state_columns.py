"""Lifecycle state lives in columns: metadata is the client's own and steers nothing."""

import uuid

import pytest

from tests.support.factories import create_entity, store_fact, store_rule

RESERVED = [
    "forgotten",
    "needs_inversion",
    "status",
    "harmful_reasons",
    "original_content",
    "merged_into",
]


@pytest.mark.parametrize("key", RESERVED)
@pytest.mark.parametrize(
    "path, body",
    [
        ("/v1/rules", {"content": "Answer briefly"}),
        ("/v1/facts", {"subject": "Ann", "predicate": "likes", "content": "Ann likes tea"}),
        ("/v1/entities", {"canonical_name": "Ann", "entity_type": "person"}),
    ],
    ids=["rule", "fact", "entity"],
)
async def test_reserved_metadata_key_is_422_naming_the_field(client, path, body, key):
    response = await client.post(path, json={**body, "metadata": {key: True}})
    assert response.status_code == 422, response.text
    [error] = response.json()["errors"]
    assert error["field"] == "body.metadata"
    assert key in error["message"]


async def test_reserved_key_in_entity_update_is_422(client):
    entity = await create_entity(client)
    response = await client.patch(
        f"/v1/entities/{entity['id']}", json={"metadata": {"needs_inversion": True}}
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.metadata"


async def test_forged_needs_inversion_in_stored_metadata_does_not_allow_inversion(client, sql):
    rule = await store_rule(client)
    await sql(
        "UPDATE rules SET metadata = '{\"needs_inversion\": true}' WHERE id = :id",
        id=uuid.UUID(rule["id"]),
    )
    response = await client.post(f"/v1/rules/{rule['id']}/invert")
    assert response.status_code == 409
    assert (await client.get(f"/v1/rules/{rule['id']}")).json()["needs_inversion"] is False


async def test_odd_forgotten_value_in_stored_metadata_breaks_no_listing(client, sql):
    rule = await store_rule(client)
    await sql('UPDATE rules SET metadata = \'{"forgotten": "maybe"}\'')
    response = await client.get("/v1/rules")
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["items"]] == [rule["id"]]
    assert response.json()["items"][0]["forgotten"] is False
    search = await client.post("/v1/search", json={"query": "Answer", "types": ["rule"]})
    assert search.status_code == 200


async def test_forgotten_rule_is_a_column_and_leaves_metadata_alone(client, sql):
    rule = await store_rule(client, metadata={"team": "ops"})
    forgotten = (await client.post(f"/v1/rules/{rule['id']}/forget")).json()
    assert (forgotten["forgotten"], forgotten["metadata"]) == (True, {"team": "ops"})
    [row] = await sql("SELECT forgotten_at, metadata FROM rules")
    assert row["forgotten_at"] is not None and row["metadata"] == {"team": "ops"}


async def test_invert_reads_reasons_from_rule_applications(client, sql):
    rule = await store_rule(client, content="Reply in French")
    for reason in ("user speaks German", None, "confused the user"):
        body = {"reason": reason} if reason else None
        assert (await client.post(f"/v1/rules/{rule['id']}/harmful", json=body)).status_code == 200
    [row] = await sql("SELECT needs_inversion, metadata FROM rules")
    assert (row["needs_inversion"], row["metadata"]) == (True, {})
    inverted = (await client.post(f"/v1/rules/{rule['id']}/invert")).json()
    assert inverted["content"].endswith("user speaks German; confused the user")
    assert inverted["original_content"] == "Reply in French"
    [row] = await sql("SELECT original_content, needs_inversion, metadata FROM rules")
    assert (row["original_content"], row["needs_inversion"], row["metadata"]) == (
        "Reply in French",
        False,
        {},
    )


async def test_confirm_clears_the_fading_column(client, sql):
    fact = await store_fact(client)
    await sql("UPDATE facts SET fading_since = now()")
    assert (await client.get(f"/v1/facts/{fact['id']}")).json()["fading"] is True
    confirmed = (await client.post(f"/v1/facts/{fact['id']}/confirm")).json()
    assert confirmed["fading"] is False
