"""A stored fact or rule is linked related_to its most similar facts and rules of its scope."""

import uuid
from typing import Any

import pytest

from tests.support.factories import store_fact, store_rule


async def related(client: Any, memory_type: str, memory_id: str) -> dict[str, float]:
    """The related_to links leaving a memory: {target id: strength}."""
    response = await client.get(
        "/v1/links",
        params={
            "memory_type": memory_type,
            "memory_id": memory_id,
            "direction": "outgoing",
            "relation": "related_to",
        },
    )
    assert response.status_code == 200, response.text
    return {link["target_id"]: link["strength"] for link in response.json()["items"]}


async def cosine(sql: Any, table: str, left: str, right: str) -> float:
    [row] = await sql(
        f"SELECT 1 - (a.embedding <=> b.embedding) AS similarity "
        f"FROM {table} a, {table} b WHERE a.id = :left AND b.id = :right",
        left=uuid.UUID(left),
        right=uuid.UUID(right),
    )
    return float(row["similarity"])


async def test_a_near_duplicate_fact_is_linked_with_its_similarity(client, sql):
    first = await store_fact(client, "Ann", "employer", "Ann works at Acme")
    second = await store_fact(client, "Ann", "job", "Ann is employed by Acme Corp")
    unrelated = await store_fact(
        client, "deploys", "schedule", "The deploy runs every Friday at noon"
    )
    links = await related(client, "fact", second["id"])
    assert links == {
        first["id"]: pytest.approx(await cosine(sql, "facts", second["id"], first["id"]), abs=1e-6)
    }
    assert links[first["id"]] >= 0.75
    assert await related(client, "fact", unrelated["id"]) == {}
    assert await related(client, "fact", first["id"]) == {}  # stored before the others


async def test_a_rule_links_to_a_similar_fact_of_its_scope_only(client, tenant_client):
    fact = await store_fact(
        client, "booking", "rule of thumb", "Always double-check the booking date", scope="travel"
    )
    elsewhere = await store_fact(
        client, "booking", "habit", "Always double-check the booking date!", scope="sales"
    )
    other = await tenant_client("other")
    await store_fact(
        other, "booking", "rule of thumb", "Always double-check the booking date", scope="travel"
    )
    rule = await store_rule(client, "Confirm the booking date before booking", scope="travel")
    links = await related(client, "rule", rule["id"])
    assert set(links) == {fact["id"]}
    assert elsewhere["id"] not in links


async def test_superseded_and_retracted_facts_are_not_linked(client):
    old = await store_fact(client, "Ann", "city", "Ann lives in Lyon")
    await store_fact(client, "Ann", "city", "Ann lives in Lyon, France")
    retracted = await store_fact(client, "Ann", "home", "Ann's home is in Lyon")
    await client.post(f"/v1/facts/{retracted['id']}/forget")
    newest = await store_fact(client, "Ann", "residence", "Ann resides in Lyon")
    links = await related(client, "fact", newest["id"])
    assert old["id"] not in links and retracted["id"] not in links
    assert len(links) == 1


async def test_at_most_max_links_the_nearest(client, app, monkeypatch):
    monkeypatch.setattr(app.state.settings.auto_links, "max_links", 2)
    contents = [
        "Alice is allergic to peanuts",
        "Alice has a peanut allergy",
        "Alice cannot eat peanuts",
    ]
    stored = [
        await store_fact(client, "Alice", f"health {i}", text) for i, text in enumerate(contents)
    ]
    newest = await store_fact(client, "Alice", "diet", "Alice must avoid peanuts")
    links = await related(client, "fact", newest["id"])
    assert len(links) == 2
    assert set(links) <= {item["id"] for item in stored}


async def test_no_links_when_the_setting_is_off(client, app, monkeypatch):
    monkeypatch.setattr(app.state.settings.auto_links, "enabled", False)
    await store_fact(client, "Ann", "employer", "Ann works at Acme")
    second = await store_fact(client, "Ann", "job", "Ann is employed by Acme Corp")
    rule = await store_rule(client, "Ann is employed by Acme Corp, mind it")
    assert await related(client, "fact", second["id"]) == {}
    assert await related(client, "rule", rule["id"]) == {}


async def test_the_threshold_setting_decides(client, app, monkeypatch):
    monkeypatch.setattr(app.state.settings.auto_links, "threshold", 0.99)
    await store_fact(client, "Ann", "employer", "Ann works at Acme")
    second = await store_fact(client, "Ann", "job", "Ann is employed by Acme Corp")
    assert await related(client, "fact", second["id"]) == {}
