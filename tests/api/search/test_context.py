"""POST /v1/context: exact format, token budget, butler scope, deterministic ties, bumps."""

import uuid

import pytest

from app.core.config import ScoreWeights
from tests.support.http import post
from tests.support.waiting import until_async


async def context(client, prompt="What does Caroline like?", butler="chat", **fields):
    response = await client.post(
        "/v1/context", json={"trigger_prompt": prompt, "butler": butler, **fields}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def test_context_has_the_exact_spec_format(client):
    await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="likes",
        content="Caroline likes pottery",
        permanence="permanent",
    )
    await post(client, "/v1/rules", content="Ask Caroline about her pottery")
    body = await context(client)
    assert body["context"] == (
        "# Memory Context\n"
        "\n## Key Facts\n"
        "- [Caroline] [likes]: Caroline likes pottery (confidence: 1.00)\n"
        "\n## Active Rules\n"
        "- Ask Caroline about her pottery (maturity: candidate, effectiveness: 0.00)\n"
    )
    assert body["characters"] == len(body["context"])
    assert [item["memory_type"] for item in body["items"]] == ["fact", "rule"]


async def test_context_without_memories_is_the_header_only(client):
    body = await context(client)
    assert body["context"] == "# Memory Context\n"
    assert body["items"] == []


async def test_default_token_budget_comes_from_settings(client):
    assert (await context(client))["token_budget"] == 3000


async def test_context_shows_decayed_confidence_with_two_decimals(client, sql):
    stored = await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="likes",
        content="Caroline likes pottery",
        permanence="volatile",
    )
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '10 days' WHERE id = :id",
        id=uuid.UUID(stored["id"]),
    )
    # 1.0 * exp(-0.03 * 10) = 0.7408
    assert "(confidence: 0.74)" in (await context(client))["context"]


@pytest.mark.parametrize("token_budget", [10, 25, 60, 120, 400])
async def test_context_never_exceeds_token_budget_times_four(client, token_budget):
    for i in range(12):
        await post(
            client,
            "/v1/facts",
            subject=f"Caroline{i}",
            predicate="likes",
            content=f"Caroline likes pottery and painting, item {i} " + "x" * (i * 9),
        )
        await post(
            client, "/v1/rules", content=f"Mention Caroline's pottery, rule {i} " + "y" * (i * 7)
        )
    body = await context(client, token_budget=token_budget)
    assert len(body["context"]) <= token_budget * 4
    assert body["characters"] == len(body["context"])
    assert body["context"].startswith("# Memory Context\n")


async def test_context_uses_the_butler_as_scope(client):
    await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="likes",
        content="Caroline likes pottery",
        scope="chat",
    )
    await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="drinks",
        content="Caroline likes green tea",
    )
    await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="reads",
        content="Caroline likes novels",
        scope="email",
    )
    text = (await context(client, butler="chat"))["context"]
    assert "pottery" in text and "green tea" in text and "novels" not in text


async def test_equal_scores_order_by_newest_then_lowest_id(client, sql, settings, monkeypatch):
    monkeypatch.setattr(
        settings.retrieval,
        "score_weights",
        ScoreWeights(relevance=0.0, importance=1.0, recency=0.0, confidence=0.0),
    )
    ids = [uuid.UUID(int=n) for n in (3, 1, 2)]
    for new_id, topic in zip(ids, ("cats", "dogs", "birds"), strict=True):
        stored = await post(
            client,
            "/v1/facts",
            subject="Caroline",
            predicate=topic,
            content=f"Caroline likes {topic}",
        )
        # One statement: the fact's periods follow it, checked at the statement's end.
        await sql(
            "WITH periods AS (UPDATE fact_periods SET fact_id = :new_id WHERE fact_id = :id) "
            "UPDATE facts SET id = :new_id, created_at = '2026-01-01T00:00:00Z' WHERE id = :id",
            new_id=new_id,
            id=uuid.UUID(stored["id"]),
        )
    await sql(
        "UPDATE facts SET created_at = '2026-02-01T00:00:00Z' WHERE id = :id", id=uuid.UUID(int=2)
    )
    body = await context(client, prompt="Caroline likes animals")
    assert [item["id"] for item in body["items"]] == [
        str(uuid.UUID(int=2)),
        str(uuid.UUID(int=1)),
        str(uuid.UUID(int=3)),
    ]
    lines = body["context"].splitlines()
    assert lines[3:6] == [
        "- [Caroline] [birds]: Caroline likes birds (confidence: 1.00)",
        "- [Caroline] [dogs]: Caroline likes dogs (confidence: 1.00)",
        "- [Caroline] [cats]: Caroline likes cats (confidence: 1.00)",
    ]


async def test_same_request_gives_the_same_block(client, settings, monkeypatch):
    monkeypatch.setattr(
        settings.retrieval,
        "score_weights",
        ScoreWeights(relevance=1.0, importance=0.0, recency=0.0, confidence=0.0),
    )
    for topic in ("cats", "dogs", "birds", "fish"):
        await post(
            client,
            "/v1/facts",
            subject="Caroline",
            predicate=topic,
            content=f"Caroline likes {topic}",
        )
    first = await context(client, prompt="Caroline pets")
    second = await context(client, prompt="Caroline pets")
    assert first["context"] == second["context"]


async def test_rules_keep_their_share_of_a_tight_budget(client, settings, monkeypatch):
    monkeypatch.setattr(settings.retrieval, "context_fact_share", 0.5)
    for i in range(10):
        await post(
            client,
            "/v1/facts",
            subject="Caroline",
            predicate=f"likes {i}",
            content=f"Caroline likes pottery class number {i}",
        )
        await post(client, "/v1/rules", content=f"Ask Caroline about pottery class {i}")
    body = await context(client, prompt="Caroline pottery class", token_budget=60)
    kinds = [item["memory_type"] for item in body["items"]]
    assert "fact" in kinds and "rule" in kinds
    assert len(body["context"]) <= 240


async def test_context_counts_a_reference_only_for_memories_in_the_block(client, sql):
    await post(
        client, "/v1/facts", subject="Caroline", predicate="likes", content="Caroline likes pottery"
    )
    await post(
        client,
        "/v1/facts",
        subject="Caroline",
        predicate="essay",
        content="Caroline wrote a long essay about pottery " + "z" * 400,
    )
    body = await context(client, prompt="Caroline pottery", token_budget=40)
    assert len(body["items"]) == 1

    async def counted() -> bool:
        rows = await sql("SELECT id::text AS id, reference_count FROM facts")
        counts = {r["id"]: r["reference_count"] for r in rows}
        return counts[body["items"][0]["id"]] == 1 and sorted(counts.values()) == [0, 1]

    # The counts are written after the answer, in a batch.
    await until_async(counted, timeout=10, message="the count written")


@pytest.mark.parametrize(
    "body",
    [
        {"trigger_prompt": "x"},
        {"butler": "chat"},
        {"trigger_prompt": "x", "butler": ""},
        {"trigger_prompt": "x", "butler": "chat", "token_budget": 0},
        {"trigger_prompt": "x" * 5000, "butler": "chat"},
    ],
)
async def test_invalid_context_request_is_422(client, body):
    assert (await client.post("/v1/context", json=body)).status_code == 422


async def test_unrelated_fact_does_not_push_deploy_rules_out_of_the_context(client):
    # The example: "Alice's birthday" (similarity about -0.02 to the prompt) used to
    # score 0.6 and take the room the deploy rule needed.
    await post(
        client,
        "/v1/facts",
        subject="Alice",
        predicate="birthday",
        content="Alice's birthday is on March 3",
        importance=10.0,
        permanence="permanent",
    )
    rule = await post(
        client, "/v1/rules", content="Always run the migrations before deploying the service"
    )
    body = await context(client, prompt="deploy the service", butler="ops", token_budget=35)
    assert "birthday" not in body["context"]
    assert "Always run the migrations before deploying the service" in body["context"]
    assert [item["id"] for item in body["items"]] == [rule["id"]]
