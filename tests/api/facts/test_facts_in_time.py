"""Facts in time: valid time, record time, and reads at a point in time, through HTTP."""

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.employer_history import (
    BELIEVED_BEFORE_CORRECTION,
    CYBERDYNE,
    HELD,
    STORE_ORDER,
)
from tests.support.factories import create_entity, store_fact

MODES = ("hybrid", "semantic", "keyword")


async def _tell_the_story(client: Any) -> tuple[dict[str, dict[str, Any]], str]:
    """Store Acme, then Cyberdyne, then (late) Bluebird; the moment before Bluebird."""
    stored: dict[str, dict[str, Any]] = {}
    before_correction = ""
    for content, valid_from in STORE_ORDER:
        if content == "Ann works at Bluebird":
            await asyncio.sleep(0.01)
            before_correction = datetime.now(UTC).isoformat()
            await asyncio.sleep(0.01)
        stored[content] = await store_fact(
            client, subject="Ann", predicate="employer", content=content, valid_from=valid_from
        )
    return stored, before_correction


async def _employers(client: Any, **params: str) -> list[str]:
    response = await client.get(
        "/v1/facts", params={"subject": "Ann", "predicate": "employer", **params}
    )
    assert response.status_code == 200, response.text
    return [fact["content"] for fact in response.json()["items"]]


async def _search(client: Any, mode: str = "hybrid", **times: str) -> dict[str, Any]:
    response = await client.post(
        "/v1/search", json={"query": "Ann works at", "types": ["fact"], "mode": mode, **times}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _contents(body: dict[str, Any]) -> list[str]:
    return [hit["content"] for hit in body["results"]]


async def test_as_of_returns_the_employer_of_each_date_and_known_at_the_belief_then(client):
    stored, before_correction = await _tell_the_story(client)
    bluebird = stored["Ann works at Bluebird"]
    assert bluebird["validity"] == "superseded"  # history: Cyberdyne stays current
    assert _day(bluebird["valid_until"]) == CYBERDYNE[1][:10]

    for as_of, employer in HELD:
        expected = [] if employer is None else [employer]
        assert await _employers(client, as_of=as_of) == expected, as_of
        for mode in MODES:
            assert _contents(await _search(client, mode, as_of=as_of)) == expected, (mode, as_of)
    for as_of, employer in BELIEVED_BEFORE_CORRECTION:
        assert await _employers(client, as_of=as_of, known_at=before_correction) == [employer]
        body = await _search(client, as_of=as_of, known_at=before_correction)
        assert _contents(body) == [employer]
        assert (body["as_of"], body["known_at"]) == (_iso(as_of), _iso(before_correction))

    today = await _search(client)
    assert _contents(today) == ["Ann works at Cyberdyne"]
    assert (today["as_of"], today["known_at"]) == (None, None)
    assert await _employers(client) == ["Ann works at Cyberdyne"]


async def test_history_shows_both_time_lines_in_valid_order(client):
    stored, _ = await _tell_the_story(client)
    current = stored["Ann works at Cyberdyne"]
    response = await client.get(f"/v1/facts/{current['id']}/history")
    assert response.status_code == 200
    periods = [
        (f["content"], _day(f["valid_from"]), _day(f["valid_until"]), f["recorded_until"])
        for f in response.json()
    ]
    assert periods == [
        ("Ann works at Cyberdyne", "2023-01-01", None, None),
        ("Ann works at Bluebird", "2021-06-01", "2023-01-01", None),
        ("Ann works at Acme", "2019-01-01", "2021-06-01", None),
    ]
    for fact in response.json():
        assert fact["recorded_at"] == fact["created_at"]


async def test_a_hit_says_the_period_its_version_held(client):
    await _tell_the_story(client)
    [hit] = (await _search(client, as_of="2022-01-01T00:00:00+00:00"))["results"]
    assert (hit["content"], _day(hit["valid_from"]), _day(hit["valid_until"])) == (
        "Ann works at Bluebird",
        "2021-06-01",
        "2023-01-01",
    )


async def test_a_read_as_known_then_shows_the_period_believed_then(client):
    _, before_correction = await _tell_the_story(client)
    as_of = "2022-01-01T00:00:00+00:00"
    [hit] = (await _search(client, as_of=as_of, known_at=before_correction))["results"]
    listed = (
        await client.get(
            "/v1/facts",
            params={
                "subject": "Ann",
                "predicate": "employer",
                "as_of": as_of,
                "known_at": before_correction,
            },
        )
    ).json()["items"]
    for acme in (hit, *listed):
        assert (acme["content"], _day(acme["valid_from"]), _day(acme["valid_until"])) == (
            "Ann works at Acme",
            "2019-01-01",
            "2023-01-01",
        )
    [today] = (await _search(client, as_of="2020-01-01T00:00:00+00:00"))["results"]
    assert (today["content"], _day(today["valid_until"])) == ("Ann works at Acme", "2021-06-01")


async def test_each_transition_writes_its_event(client, sql):
    stored, _ = await _tell_the_story(client)
    events = await sql(
        "SELECT event_type, payload FROM memory_events "
        "WHERE event_type IN ('fact_superseded', 'fact_period_closed', "
        "'fact_placed_in_history') ORDER BY created_at, event_type"
    )
    acme, bluebird = stored["Ann works at Acme"], stored["Ann works at Bluebird"]
    assert [(e["event_type"], e["payload"]["memory_id"]) for e in events] == [
        ("fact_superseded", acme["id"]),
        ("fact_period_closed", acme["id"]),
        ("fact_placed_in_history", bluebird["id"]),
    ]
    closed = events[1]["payload"]
    assert (_day(closed["previous_valid_until"]), _day(closed["valid_until"])) == (
        "2023-01-01",
        "2021-06-01",
    )


async def test_a_correction_of_the_same_period_ends_the_belief_in_the_old_version(client):
    stored, _ = await _tell_the_story(client)
    await asyncio.sleep(0.01)
    before = datetime.now(UTC).isoformat()
    await asyncio.sleep(0.01)
    fixed = await store_fact(
        client,
        subject="Ann",
        predicate="employer",
        content="Ann works at Cyberdyne Systems",
        valid_from=CYBERDYNE[1],
    )
    old = (await client.get(f"/v1/facts/{stored['Ann works at Cyberdyne']['id']}")).json()
    assert old["validity"] == "superseded" and old["recorded_until"] is not None
    assert fixed["validity"] == "active"
    later = "2024-01-01T00:00:00+00:00"
    assert await _employers(client, as_of=later) == ["Ann works at Cyberdyne Systems"]
    assert await _employers(client, as_of=later, known_at=before) == ["Ann works at Cyberdyne"]


async def test_a_retracted_fact_was_still_believed_before_it_was_retracted(client):
    fact = await store_fact(
        client,
        subject="Bob",
        predicate="city",
        content="Bob lives in Rome",
        valid_from="2020-01-01T00:00:00+00:00",
    )
    await asyncio.sleep(0.01)
    before = datetime.now(UTC).isoformat()
    await asyncio.sleep(0.01)
    forgotten = (await client.post(f"/v1/facts/{fact['id']}/forget")).json()
    assert forgotten["recorded_until"] is not None
    params = {"subject": "Bob", "predicate": "city", "as_of": "2021-01-01T00:00:00+00:00"}
    assert (await client.get("/v1/facts", params=params)).json()["items"] == []
    listed = (await client.get("/v1/facts", params={**params, "known_at": before})).json()
    assert [f["id"] for f in listed["items"]] == [fact["id"]]


async def test_an_entitys_facts_at_a_point_in_time(client):
    ann = await create_entity(client, "Ann")
    for content, valid_from in STORE_ORDER:
        await store_fact(
            client,
            subject="Ann",
            predicate="employer",
            content=content,
            valid_from=valid_from,
            entity_id=ann["id"],
        )
    response = await client.get(
        f"/v1/entities/{ann['id']}/facts", params={"as_of": "2022-01-01T00:00:00+00:00"}
    )
    assert response.status_code == 200
    body = response.json()
    assert [f["content"] for f in body["items"]] == ["Ann works at Bluebird"]
    assert body["as_of"] == _iso("2022-01-01T00:00:00+00:00") and body["known_at"] is None
    today = (await client.get(f"/v1/entities/{ann['id']}/facts")).json()
    assert [f["content"] for f in today["items"]] == ["Ann works at Cyberdyne"]
    assert today["as_of"] is None


async def test_as_of_composes_with_scope_recall_and_context(client):
    await _tell_the_story(client)
    await store_fact(
        client,
        subject="Ann",
        predicate="employer",
        scope="hr",
        content="Ann works at Initech",
        valid_from="2021-01-01T00:00:00+00:00",
    )
    as_of = "2022-01-01T00:00:00+00:00"
    scoped = await client.post(
        "/v1/search",
        json={"query": "Ann works at", "types": ["fact"], "scope": "hr", "as_of": as_of},
    )
    assert sorted(_contents(scoped.json())) == ["Ann works at Bluebird", "Ann works at Initech"]
    recalled = await client.post(
        "/v1/recall", json={"topic": "Ann works at", "as_of": as_of, "scope": "global"}
    )
    assert recalled.status_code == 200, recalled.text
    assert [hit["content"] for hit in recalled.json()["results"]] == ["Ann works at Bluebird"]
    assert recalled.json()["as_of"] == _iso(as_of)
    context = await client.post(
        "/v1/context",
        json={"trigger_prompt": "Where does Ann work?", "butler": "hr", "as_of": as_of},
    )
    assert context.status_code == 200, context.text
    assert "Bluebird" in context.json()["context"]
    assert "Cyberdyne" not in context.json()["context"]
    assert context.json()["as_of"] == _iso(as_of)


@pytest.mark.parametrize(
    "period",
    [
        {"valid_from": "2020-01-01T00:00:00+00:00", "valid_until": "2019-01-01T00:00:00+00:00"},
        {"valid_until": "2001-01-01T00:00:00+00:00"},
    ],
)
async def test_a_period_that_ends_before_it_starts_is_refused(client, period):
    response = await client.post(
        "/v1/facts",
        json={"subject": "Ann", "predicate": "employer", "content": "Ann works at Acme", **period},
    )
    assert response.status_code == 422
    assert "valid_until" in response.text


def _iso(value: str) -> str:
    return datetime.fromisoformat(value).isoformat()


def _day(value: str | None) -> str | None:
    return None if value is None else value[:10]


async def test_facts_imported_without_periods_are_believed_since_they_were_stored(client):
    line = json.dumps(
        {
            "kind": "fact",
            "id": str(uuid.uuid4()),
            "tenant_id": "default",
            "subject": "Ann",
            "predicate": "employer",
            "subject_key": "ann",
            "predicate_key": "employer",
            "content": "Ann works at Acme",
            "created_at": "2021-01-01T00:00:00+00:00",
            "valid_from": "2019-01-01T00:00:00+00:00",
        }
    )
    response = await client.post(
        "/v1/import", content=line + "\n", headers={"Content-Type": "application/x-ndjson"}
    )
    assert response.status_code == 200, response.text
    assert await _employers(
        client, as_of="2020-01-01T00:00:00+00:00", known_at="2022-01-01T00:00:00+00:00"
    ) == ["Ann works at Acme"]
    assert (
        await _employers(
            client, as_of="2020-01-01T00:00:00+00:00", known_at="2020-06-01T00:00:00+00:00"
        )
        == []
    )


@pytest.mark.parametrize(
    ("index", "condition"),
    [
        (
            "ix_facts_valid_time",
            "f.recorded_until IS NULL AND tstzrange(f.valid_from, f.valid_until) @> now()",
        ),
        ("ix_facts_record_time", "tstzrange(f.created_at, f.recorded_until) @> now()"),
        (
            "ix_fact_periods_time",
            "EXISTS (SELECT 1 FROM fact_periods p "
            "WHERE tstzrange(p.recorded_at, p.recorded_until) @> now() "
            "AND tstzrange(p.valid_from, p.valid_until) @> now())",
        ),
    ],
)
async def test_reads_at_a_point_in_time_have_a_range_index(db_engine, index, condition):
    async with db_engine.begin() as conn:
        await conn.execute(text("SET LOCAL enable_seqscan = off"))
        plan = "\n".join(
            row[0]
            for row in await conn.execute(
                text(f"EXPLAIN SELECT f.id FROM facts f WHERE {condition}")
            )
        )
    assert index in plan, plan
    assert "@> now()" in plan.split(index, 1)[1].split("\n")[1], plan
