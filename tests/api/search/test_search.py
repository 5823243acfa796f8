"""POST /v1/search: result shape, RRF scores and ordering, the OR keyword leg, hostile input."""

import math

import pytest

from app.retrieval.rerank import SIGNALS
from tests.support.factories import store_episode, store_fact


async def search(client, query, **fields):
    response = await client.post("/v1/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def test_result_carries_type_fields_and_scores_but_no_embedding(client):
    stored = await store_fact(
        client, "Caroline", "researched", "Caroline researched adoption agencies"
    )
    [hit] = await search(client, "adoption agencies Caroline researched", fusion="rrf")
    assert hit["memory_type"] == "fact"
    assert hit["id"] == stored["id"]
    assert (hit["subject"], hit["predicate"]) == ("Caroline", "researched")
    assert hit["validity"] == "active"
    assert "embedding" not in hit and "search_vector" not in hit
    assert (hit["semantic_rank"], hit["keyword_rank"]) == (1, 1)
    assert hit["rrf_score"] == pytest.approx(2 / 61)
    assert 0.5 < hit["similarity"] <= 1.0
    assert hit["rank"] > 0


async def test_default_mode_is_hybrid(client):
    await store_episode(client, "We adopted a dog")
    response = await client.post("/v1/search", json={"query": "dog"})
    assert response.json()["mode"] == "hybrid"


async def test_missing_keyword_rank_counts_as_limit_plus_one(client):
    await store_episode(client, "I bought a new car last spring")
    [hit] = await search(client, "automobile purchase", limit=5, fusion="rrf")
    assert hit["keyword_rank"] is None
    assert hit["semantic_rank"] == 1
    assert hit["rrf_score"] == pytest.approx(1 / 61 + 1 / 66)


async def test_rrf_tie_is_broken_by_semantic_rank(client):
    await store_episode(client, "Paris is the capital of France")
    await store_episode(client, "The Eiffel Tower stands in Paris, France")
    keyword_only = await store_episode(
        client, "The shutdown delayed my tax refund, said the government"
    )
    results = await search(
        client, "Which city is the French seat of government?", limit=2, fusion="rrf"
    )
    first, second = results
    assert (first["semantic_rank"], first["keyword_rank"]) == (1, None)
    assert second["id"] == keyword_only["id"]
    assert (second["semantic_rank"], second["keyword_rank"]) == (None, 1)
    assert first["rrf_score"] == pytest.approx(second["rrf_score"])
    assert first["rrf_score"] == pytest.approx(1 / 61 + 1 / 63)


async def test_hybrid_orders_by_rrf_score_descending(client):
    for text in (
        "Melanie paints sunsets at the lake",
        "Melanie runs a pottery class",
        "Caroline went to a support group",
        "The weather was rainy",
    ):
        await store_episode(client, text)
    results = await search(client, "Melanie painting", limit=4, fusion="rrf")
    scores = [r["rrf_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert results[0]["content"] == "Melanie paints sunsets at the lake"


async def test_semantic_mode_orders_by_similarity(client):
    for text in (
        "Caroline loves hiking in the mountains",
        "Stock prices fell on Monday",
        "Mountain trails are great for walking",
    ):
        await store_episode(client, text)
    results = await search(client, "hiking trip in the mountains", mode="semantic")
    similarities = [r["similarity"] for r in results]
    assert similarities == sorted(similarities, reverse=True)
    assert [r["semantic_rank"] for r in results] == [1, 2, 3]
    assert all(r["rrf_score"] is None and r["rank"] is None for r in results)


async def test_keyword_leg_ors_the_question_lexemes(client):
    researched = await store_episode(client, "Caroline researched adoption agencies")
    await store_episode(client, "Melanie went camping")
    results = await search(client, "What did Caroline research last week?", mode="keyword")
    assert [r["id"] for r in results] == [researched["id"]]
    assert results[0]["rank"] > 0 and results[0]["similarity"] is None


async def test_keyword_ranks_documents_matching_more_terms_first(client):
    await store_episode(client, "Caroline went to the beach")
    both = await store_episode(client, "Caroline researched adoption agencies")
    results = await search(client, "Caroline adoption", mode="keyword")
    assert results[0]["id"] == both["id"]
    assert results[0]["rank"] > results[1]["rank"]


async def test_keyword_list_scores_the_nearest_memories_its_postings_walk_passed_over(client):
    """Each word's 100 best postings are shorter memories holding that word alone; the memory
    holding both words is found by its vector, and BM25 ranks it first in the keyword list."""
    for word in ("kayak", "lantern"):
        response = await client.post(
            "/v1/episodes/batch",
            json={"items": [{"content": word, "butler": "chat"} for _ in range(120)]},
        )
        assert response.status_code in (200, 201), response.text
    both = await store_episode(client, "kayak lantern")
    results = await search(client, "kayak lantern", mode="hybrid", limit=20)
    ranks = {r["id"]: r["keyword_rank"] for r in results}
    assert ranks.get(both["id"]) == 1


@pytest.mark.parametrize("query", ["", "   ", "\x00", "\t\n \x00 "])
@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
async def test_empty_query_returns_no_results(client, query, mode):
    await store_episode(client, "the of and a")
    assert await search(client, query, mode=mode) == []


async def test_stop_words_only_query_finds_nothing_by_keyword(client):
    await store_episode(client, "the of and a")
    assert await search(client, "the of and a", mode="keyword") == []


@pytest.mark.parametrize(
    "query",
    [
        "'",
        '"',
        "&|!:*()",
        "a & b | !c",
        "foo:* & (bar | !baz)",
        "<->",
        "<2>",
        "\\",
        "''''",
        "x\x00y",
        "'; DROP TABLE episodes; --",
        "caf\u00e9 \u2603 \U0001f600",
        "a" * 4000,
    ],
)
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_hostile_query_never_fails(client, query, mode):
    await store_episode(client, "Caroline & Melanie: (friends) | forever!")
    response = await client.post("/v1/search", json={"query": query, "mode": mode})
    assert response.status_code == 200, response.text


async def test_nul_is_dropped_from_the_query(client):
    stored = await store_episode(client, "Melanie paints")
    [hit] = await search(client, "pai\x00nts", mode="keyword")
    assert hit["id"] == stored["id"]


async def test_megabyte_query_is_a_422_naming_the_field(client):
    response = await client.post("/v1/search", json={"query": "x" * (1024 * 1024)})
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert [e["field"] for e in response.json()["errors"]] == ["body.query"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 101},
        {"query": "x", "mode": "fuzzy"},
        {"query": "x", "types": ["memo"]},
        {"query": "x", "types": []},
        {"query": "x", "min_confidence": 1.5},
        {"query": "x", "unknown": 1},
        {"limit": 3},
    ],
)
async def test_invalid_search_request_is_422(client, body):
    response = await client.post("/v1/search", json=body)
    assert response.status_code == 422


async def test_limit_caps_the_results(client):
    for i in range(6):
        await store_episode(client, f"Caroline note number {i} about painting")
    assert len(await search(client, "Caroline painting", limit=4)) == 4


async def test_hybrid_hits_explain_each_signals_contribution(client):
    await store_episode(client, "Melanie painted a sunrise over the lake")
    await store_episode(client, "The lake froze early this winter")

    results = await search(client, "Melanie painted the lake", fusion="rrf")

    for hit in results:
        parts = hit["contributions"]
        assert set(parts) == {"semantic", "keyword", "time"}
        assert sum(parts.values()) == pytest.approx(hit["fused_score"])
        assert hit["fused_score"] == pytest.approx(hit["rrf_score"])


async def test_weighted_fusion_orders_by_normalised_weighted_scores(client):
    painted = await store_episode(client, "Melanie painted a sunrise over the lake")
    await store_episode(client, "The lake froze early this winter")

    results = await search(client, "Melanie painted the lake", fusion="weighted")

    assert results[0]["id"] == painted["id"]
    assert results[0]["rrf_score"] is None
    # The best of both lists gets each list's full weight (0.5 + 0.5 by default).
    assert results[0]["fused_score"] == pytest.approx(1.0)
    assert [r["fused_score"] for r in results] == sorted(
        (r["fused_score"] for r in results), reverse=True
    )


async def test_unknown_fusion_is_a_422_naming_the_field(client):
    response = await client.post("/v1/search", json={"query": "lake", "fusion": "max"})
    assert response.status_code == 422
    assert "fusion" in response.text


async def test_default_hybrid_search_is_learned_and_explains_each_score(client):
    await store_episode(client, "Melanie painted a sunrise over the lake", session_id="s1")
    await store_episode(client, "The lake froze early this winter", session_id="s1")
    await store_fact(client, "Melanie", "hobby", "Melanie paints landscapes")

    results = await search(client, "Melanie painted the lake")

    assert results[0]["content"] == "Melanie painted a sunrise over the lake"
    scores = [hit["fused_score"] for hit in results]
    assert scores == sorted(scores, reverse=True)
    for hit in results:
        assert hit["rrf_score"] is None
        assert set(hit["contributions"]) == {"base", *SIGNALS}
        logit = sum(hit["contributions"].values())
        assert hit["fused_score"] == pytest.approx(1 / (1 + math.exp(-logit)))


@pytest.mark.parametrize("types", [["episode"], ["fact"], None])
async def test_learned_fusion_ranks_memories_without_sessions_between_them_by_rrf(client, types):
    # Notes without session ids (no sessions inferred here) and facts share no session, so
    # the learned stage's session signals have nothing to read: RRF orders them. The fact
    # never decays, so freshness (test_stale_search) leaves RRF's order as it is.
    await store_episode(client, "Melanie painted a sunrise over the lake")
    await store_episode(client, "The lake froze early this winter")
    await store_fact(
        client, "Melanie", "hobby", "Melanie paints landscapes by the lake", permanence="permanent"
    )
    body = {"types": types} if types else {}

    learned = await search(client, "Melanie painted the lake", **body)
    rrf = await search(client, "Melanie painted the lake", fusion="rrf", **body)

    assert [hit["id"] for hit in learned] == [hit["id"] for hit in rrf]
    for hit in learned:
        assert set(hit["contributions"]) == {"semantic", "keyword", "time"}
        assert hit["fused_score"] == pytest.approx(hit["rrf_score"])


async def test_long_notes_without_sessions_rank_as_rrf_ranks_their_passages(client):
    # Windows of long notes lift them in the learned stage's lists, not in rrf's: the
    # lists are read again as rrf reads them.
    filler = " ".join(f"Item {i} of the meeting was the budget for the spring." for i in range(20))
    notes = [
        f"{filler} Melanie painted a sunrise over the lake.",
        f"Melanie talked about the lake. {filler}",
        "The lake froze early this winter",
    ]
    for note in notes:
        await store_episode(client, note)

    learned = await search(client, "Melanie painted a sunrise over the lake")
    rrf = await search(client, "Melanie painted a sunrise over the lake", fusion="rrf")

    assert any(hit["passage"] for hit in rrf)
    assert [(hit["id"], hit["rrf_score"]) for hit in learned] == [
        (hit["id"], hit["rrf_score"]) for hit in rrf
    ]


async def test_learned_fusion_orders_a_pool_once_two_memories_share_a_session(client):
    await store_episode(client, "Melanie painted a sunrise over the lake", session_id="s1")
    await store_episode(client, "The lake froze early this winter", session_id="s1")
    await store_fact(client, "Melanie", "hobby", "Melanie paints landscapes by the lake")

    results = await search(client, "Melanie painted the lake")

    assert {hit["memory_type"] for hit in results} == {"episode", "fact"}
    for hit in results:
        assert hit["rrf_score"] is None
        assert set(hit["contributions"]) == {"base", *SIGNALS}
