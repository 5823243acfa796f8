"""Search deprioritises stale facts: of two equally relevant facts the fresh one comes first
under the default (learned) and weighted fusion, as in recall, while rrf keeps its formula."""

import math

import pytest

from tests.support.factories import store_episode, store_fact

QUERY = "Ann drinks green tea every morning"
# 0.5 + 0.5 * exp(-0.008 * 150): what a standard fact last confirmed 150 days ago keeps.
STALE_FACTOR = 0.5 + 0.5 * math.exp(-0.008 * 150)


async def two_facts(client, sql, stale_content, fresh_content):
    """Two facts about Ann; the first was last confirmed 150 days ago (effective confidence
    about 0.30), the second today."""
    stale = await store_fact(client, "Ann", "drink_one", stale_content)
    fresh = await store_fact(client, "Ann", "drink_two", fresh_content)
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '150 days' WHERE id = :id",
        id=stale["id"],
    )
    shown = (await client.get(f"/v1/facts/{stale['id']}")).json()
    assert shown["effective_confidence"] == pytest.approx(0.30, abs=0.01)
    return stale["id"], fresh["id"]


async def ranked(client, types=("fact",), **fields):
    response = await client.post(
        "/v1/search", json={"query": QUERY, "types": list(types), **fields}
    )
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def test_default_search_ranks_the_fresh_fact_first(client, sql):
    # The stale fact says it in the query's very words, so it is a touch more relevant.
    stale, fresh = await two_facts(client, sql, QUERY, "Every morning Ann drinks green tea")
    assert [hit["id"] for hit in await ranked(client)] == [fresh, stale]
    recalled = await client.post("/v1/recall", json={"topic": QUERY})
    assert recalled.status_code == 200, recalled.text
    assert [item["id"] for item in recalled.json()["results"]] == [fresh, stale]


async def test_fresh_fact_comes_first_among_notes_without_sessions(client, sql):
    # Notes without session ids share no session with the facts, so the default fusion
    # falls back to RRF's lists; the stale fact still goes behind.
    await store_episode(client, "Ann said green tea keeps her calm in the morning")
    stale, fresh = await two_facts(client, sql, QUERY, "Every morning Ann drinks green tea")
    hits = await ranked(client, types=("fact", "episode"))
    facts = [hit for hit in hits if hit["memory_type"] == "fact"]
    assert [hit["id"] for hit in facts] == [fresh, stale]
    for hit in facts:
        assert hit["fused_score"] == pytest.approx(
            hit["rrf_score"] * (0.5 + 0.5 * hit["effective_confidence"]), rel=1e-3
        )


async def test_weighted_fusion_scales_a_stale_facts_score(client, sql):
    stale, fresh = await two_facts(client, sql, QUERY, QUERY)
    first, second = await ranked(client, fusion="weighted")
    assert (first["id"], second["id"]) == (fresh, stale)
    assert second["fused_score"] == pytest.approx(first["fused_score"] * STALE_FACTOR, rel=1e-3)


async def test_rrf_fusion_keeps_its_formula(client, sql):
    await two_facts(client, sql, QUERY, "Every morning Ann drinks green tea")
    for hit in await ranked(client, fusion="rrf"):
        assert hit["fused_score"] == pytest.approx(hit["rrf_score"])
        assert hit["rrf_score"] == pytest.approx(
            1 / (60 + hit["semantic_rank"]) + 1 / (60 + hit["keyword_rank"])
        )
