"""Server-Timing on search, recall and context: the stages named, their durations, the
`engram_read_stage_seconds` histogram; none on an error, none outside a request."""

import re

import pytest

from app.telemetry.stages import STAGES, collecting, stage
from tests.support.http import post
from tests.support.metrics import sample

ENTRY = re.compile(r'^([a-z_]+);dur=(\d+(?:\.\d+)?);desc="([^"]*)"$')
# Durations are printed to 0.01 ms: each entry may be rounded by half of that.
ROUNDING = 0.005


def timings(response) -> dict[str, float]:
    """The Server-Timing entries of an answer, name -> milliseconds (each name once)."""
    assert response.status_code == 200, response.text
    entries = {}
    for part in response.headers["server-timing"].split(", "):
        found = ENTRY.match(part)
        assert found, part
        name, dur, desc = found.groups()
        assert name not in entries
        assert desc == STAGES[name]
        entries[name] = float(dur)
    return entries


def assert_adds_up(entries: dict[str, float]) -> None:
    total = entries.pop("total")
    assert all(dur >= 0 for dur in entries.values())
    assert sum(entries.values()) <= total + ROUNDING * (len(entries) + 1)


@pytest.fixture
async def seeded(client):
    await post(client, "/v1/facts", subject="Mel", predicate="sport", content="Mel swims daily")
    await post(client, "/v1/rules", content="Ask Mel about swimming before noon")
    await post(client, "/v1/episodes", butler="chat", content="Mel went swimming at the lake")


async def test_hybrid_search_says_where_its_time_went(client, seeded):
    response = await client.post("/v1/search", json={"query": "Mel swimming", "mode": "hybrid"})

    entries = timings(response)
    assert {"embed", "prepare", "sql", "fusion", "load", "serialise", "total"} <= set(entries)
    assert list(entries)[-1] == "total"
    assert_adds_up(entries)


async def test_keyword_search_has_no_embed_entry(client, seeded):
    response = await client.post("/v1/search", json={"query": "Mel swimming", "mode": "keyword"})

    entries = timings(response)
    assert "embed" not in entries
    assert {"sql", "fusion", "load", "serialise", "total"} <= set(entries)
    assert_adds_up(entries)


async def test_recall_and_context_say_where_their_time_went(client, seeded):
    recalled = await client.post("/v1/recall", json={"topic": "Mel swimming"})
    context = await client.post(
        "/v1/context", json={"trigger_prompt": "Mel swimming", "butler": "chat"}
    )

    for response in (recalled, context):
        entries = timings(response)
        assert {"embed", "sql", "fusion", "load", "bump", "serialise", "total"} <= set(entries)
        assert_adds_up(entries)


async def test_an_error_answer_has_no_header(client):
    response = await client.post("/v1/search", json={"query": "x", "limit": -1})

    assert response.status_code == 422
    assert "server-timing" not in response.headers


async def test_the_stages_are_counted_in_metrics(client, seeded):
    def counts(text: str) -> tuple[float, float]:
        return (
            sample(text, "engram_read_stage_seconds_count", operation="search", stage="sql"),
            sample(text, "engram_read_stage_seconds_count", operation="recall", stage="total"),
        )

    before = counts((await client.get("/metrics")).text)
    for _ in range(2):
        await client.post("/v1/search", json={"query": "Mel swimming"})
    await client.post("/v1/recall", json={"topic": "Mel swimming"})

    after = counts((await client.get("/metrics")).text)
    assert after == (before[0] + 2, before[1] + 1)


def test_stages_outside_a_collection_cost_nothing_and_record_nothing():
    with stage("sql"):
        pass
    assert stage("sql") is stage("fusion")

    with collecting("search") as stages:
        with stage("sql"):
            pass
        with stage("sql"):
            pass
    with stage("fusion"):
        pass

    assert list(stages.seconds) == ["sql"]
