"""POST /v1/recall: composite score, relevance normalisation, thresholds, reference bumps."""

import math
import uuid
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from tests.support.http import post
from tests.support.waiting import until_async


async def recall(client, topic, **fields):
    response = await client.post("/v1/recall", json={"topic": topic, **fields})
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def test_recall_returns_facts_and_rules_only(client):
    await post(client, "/v1/episodes", butler="chat", content="Caroline likes tea")
    stored_fact = await post(
        client, "/v1/facts", subject="Caroline", predicate="drink", content="Caroline likes tea"
    )
    stored_rule = await post(client, "/v1/rules", content="Offer Caroline tea")
    results = await recall(client, "Caroline tea")
    assert {(r["memory_type"], r["id"]) for r in results} == {
        ("fact", stored_fact["id"]),
        ("rule", stored_rule["id"]),
    }


async def test_composite_score_follows_the_formula(client, sql):
    stored = await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="pet",
        content="Caroline has a dog named Max",
        importance=8.0,
        permanence="stable",
    )
    await sql(
        "UPDATE facts SET last_referenced_at = now(), "
        "last_confirmed_at = now() - interval '7 days' WHERE id = :id",
        id=uuid.UUID(stored["id"]),
    )
    [hit] = await recall(client, "Caroline dog Max")
    assert hit["relevance"] == pytest.approx(1.0)
    assert hit["recency"] == pytest.approx(0.5, abs=1e-4)
    assert hit["effective_confidence"] == pytest.approx(math.exp(-0.002 * 7), abs=1e-5)
    assert hit["composite_score"] == pytest.approx(
        0.4 * 1.0 + 0.3 * 0.8 + 0.2 * 0.5 + 0.1 * math.exp(-0.014), abs=1e-4
    )


async def test_new_memory_is_fully_recent_and_recall_does_not_raise_it(client):
    await post(client, "/v1/facts", subject="Mel", predicate="sport", content="Mel swims")
    [first] = await recall(client, "Mel swims")
    [second] = await recall(client, "Mel swims")
    assert first["recency"] == pytest.approx(1.0, abs=1e-4)
    assert second["composite_score"] == pytest.approx(first["composite_score"], abs=1e-4)


async def test_recency_counts_from_the_last_confirmation(client, sql):
    await post(client, "/v1/facts", subject="Mel", predicate="sport", content="Mel swims")
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '14 days', "
        "created_at = now() - interval '30 days'"
    )
    [hit] = await recall(client, "Mel swims")
    assert hit["recency"] == pytest.approx(0.25, abs=1e-4)


async def test_confirmation_in_the_future_is_clamped_to_recency_one(client, sql):
    await post(client, "/v1/facts", subject="Mel", predicate="sport", content="Mel swims")
    await sql("UPDATE facts SET last_confirmed_at = now() + interval '2 days'")
    [hit] = await recall(client, "Mel swims")
    assert hit["recency"] == 1.0


async def test_clearly_more_relevant_memory_outranks_a_more_recent_one(client, sql):
    relevant = await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="pet",
        content="Caroline adopted a rescue dog named Max",
    )
    recent = await post(
        client, "/v1/facts", subject="Melanie", predicate="pet", content="Melanie owns a cat"
    )
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '5 days' WHERE id = :id",
        id=uuid.UUID(relevant["id"]),
    )
    results = await recall(client, "Caroline rescue dog Max")
    assert [r["id"] for r in results] == [relevant["id"], recent["id"]]
    assert results[1]["keyword_rank"] is None
    # Dividing rrf by its best score 2/61 would give the second one relevance > 0.8 and let
    # recency win.
    assert results[1]["relevance"] < 0.5
    assert results[1]["recency"] > results[0]["recency"]


async def test_recall_bumps_every_returned_memory_once(client, sql):
    first = await post(
        client, "/v1/facts", subject="Mel", predicate="job", content="Mel is a nurse"
    )
    rule = await post(client, "/v1/rules", content="Ask Mel about nursing shifts")
    other = await post(
        client, "/v1/facts", subject="Mel", predicate="car", content="Mel drives", scope="email"
    )
    results = await recall(client, "Mel nurse", scope="chat")
    assert {r["id"] for r in results} == {first["id"], rule["id"]}
    assert all(r["reference_count"] == 1 and r["last_referenced_at"] for r in results)

    async def counted(expected: dict[str, int]) -> bool:
        rows = await sql(
            "SELECT id::text AS id, reference_count, last_referenced_at FROM facts "
            "UNION ALL SELECT id::text, reference_count, last_referenced_at FROM rules"
        )
        return {row["id"]: row["reference_count"] for row in rows} == expected

    # The counts are written after the answer, in a batch.
    written = {first["id"]: 1, rule["id"]: 1, other["id"]: 0}
    await until_async(lambda: counted(written), timeout=10, message="the counts written")
    again = await recall(client, "Mel nurse", scope="chat")
    assert all(r["reference_count"] == 2 for r in again)
    written = {first["id"]: 2, rule["id"]: 2, other["id"]: 0}
    await until_async(lambda: counted(written), timeout=10, message="the counts written")


async def test_the_counts_of_one_memory_type_are_written_while_another_type_is_locked(
    client, sql, db_engine
):
    """The queue writes each memory type in a transaction of its own: it never holds one
    table's lock while it waits for another's (a lock cycle with another writer)."""
    fact = await post(client, "/v1/facts", subject="Mel", predicate="job", content="Mel is a nurse")
    rule = await post(client, "/v1/rules", content="Ask Mel about nursing shifts")

    async def count(table: str, memory_id: str) -> int:
        [row] = await sql(f"SELECT reference_count FROM {table} WHERE id = :id", id=memory_id)
        return row["reference_count"]

    async with db_engine.connect() as holder:
        await holder.begin()
        await holder.execute(text("LOCK TABLE rules IN SHARE MODE"))  # refuses row writes
        assert len(await recall(client, "Mel nurse")) == 2
        await until_async(
            lambda: _is(count("facts", fact["id"]), 1), timeout=10, message="the fact's count"
        )
        assert await count("rules", rule["id"]) == 0
        await holder.rollback()
    await until_async(
        lambda: _is(count("rules", rule["id"]), 1), timeout=10, message="the rule's count"
    )


async def _is(value: Awaitable[int], expected: int) -> bool:
    return await value == expected


async def test_recall_shows_every_reference_counted_so_far(client):
    """Recalled three times in a row, a memory shows each reference, whether the counts were
    written in between or still wait to be."""
    fact = await post(client, "/v1/facts", subject="Mel", predicate="job", content="Mel is a nurse")
    shown = []
    for _ in range(3):
        [result] = await recall(client, "Mel nurse")
        shown.append(result["reference_count"])
    assert shown == [1, 2, 3], fact


async def test_recall_leaves_out_memories_below_default_min_confidence(client, sql):
    kept = await post(client, "/v1/facts", subject="Mel", predicate="job", content="Mel is a nurse")
    faded = await post(
        client,
        "/v1/facts",
        subject="Mel",
        predicate="old job",
        content="Mel was a nurse",
        permanence="ephemeral",
    )
    # 0.1/day for 20 days: exp(-2) = 0.135.
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '20 days' WHERE id = :id",
        id=uuid.UUID(faded["id"]),
    )
    assert [r["id"] for r in await recall(client, "Mel nurse")] == [kept["id"]]
    assert {r["id"] for r in await recall(client, "Mel nurse", min_confidence=0.1)} == {
        kept["id"],
        faded["id"],
    }


async def test_recall_limit_caps_results(client):
    for i in range(4):
        await post(
            client,
            "/v1/facts",
            subject=f"Mel{i}",
            predicate="likes",
            content=f"Mel likes painting number {i}",
        )
    assert len(await recall(client, "Mel painting", limit=2)) == 2


async def test_recall_of_empty_topic_is_empty(client):
    await post(client, "/v1/facts", subject="Mel", predicate="job", content="Mel is a nurse")
    assert await recall(client, "   ") == []


async def test_memories_below_the_relevance_floor_are_left_out(client):
    await post(
        client,
        "/v1/facts",
        subject="Alice",
        predicate="birthday",
        content="Alice's birthday is on March 3",
        importance=10.0,
    )
    rule = await post(
        client, "/v1/rules", content="Always run the migrations before deploying the service"
    )
    results = await recall(client, "deploy the service")
    assert [r["id"] for r in results] == [rule["id"]]


async def test_recall_without_limit_uses_the_configured_default_limit(
    client, settings, monkeypatch
):
    for i in range(5):
        await post(
            client,
            "/v1/facts",
            subject=f"Mel{i}",
            predicate="likes",
            content=f"Mel likes painting number {i}",
        )
    monkeypatch.setattr(settings.retrieval, "default_limit", 3)
    assert len(await recall(client, "Mel painting")) == 3
    response = await client.post("/v1/search", json={"query": "Mel painting"})
    assert len(response.json()["results"]) == 3


async def test_reference_time_moves_recency_and_is_validated(client):
    await client.post(
        "/v1/facts",
        json={
            "subject": "Ann",
            "predicate": "drinks",
            "content": "Ann drinks oat milk in her coffee",
        },
    )
    later = (datetime.now(UTC) + timedelta(days=14)).isoformat()

    now_hit = (await client.post("/v1/recall", json={"topic": "Ann's coffee"})).json()
    then = await client.post("/v1/recall", json={"topic": "Ann's coffee", "reference_time": later})
    assert then.status_code == 200, then.text
    assert now_hit["results"][0]["recency"] == pytest.approx(1.0, abs=0.01)
    assert then.json()["results"][0]["recency"] == pytest.approx(0.25, abs=0.01)
    bad = await client.post(
        "/v1/context",
        json={"trigger_prompt": "coffee", "butler": "b", "reference_time": 1700000000},
    )
    assert bad.status_code == 422 and "reference_time" in bad.text
