"""Contradictions count through HTTP: a `contradicts` link or a contradict call halves a fact's
confidence and counts; validations count; enough net contradictions retract the fact."""

import uuid

import pytest

from tests.support.factories import ref, store_episode, store_fact
from tests.support.http import post


def link(source, target, relation):
    return {
        "source_type": source[0],
        "source_id": source[1],
        "target_type": target[0],
        "target_id": target[1],
        "relation": relation,
    }


async def fact_now(client, fact_id):
    response = await client.get(f"/v1/facts/{fact_id}")
    assert response.status_code == 200, response.text
    return response.json()


async def contradict(client, fact_id, **body):
    response = await client.post(f"/v1/facts/{fact_id}/contradict", json=body or None)
    assert response.status_code == 200, response.text
    return response.json()


async def test_contradicts_link_beside_an_automatic_related_to_counts(client):
    works = await store_fact(client, "Ann", "works_at", "Ann works at Acme")
    employed = await store_fact(client, "Ann", "employer", "Ann is employed by Acme Corp")
    auto = (
        await client.get("/v1/links", params={"memory_type": "fact", "memory_id": employed["id"]})
    ).json()
    assert ("related_to", works["id"]) in {(x["relation"], x["target_id"]) for x in auto["items"]}

    response = await client.post(
        "/v1/links", json=link(ref("fact", employed), ref("fact", works), "contradicts")
    )
    assert response.status_code == 201, response.text

    contradicted = await fact_now(client, works["id"])
    assert contradicted["contradiction_count"] == 1
    assert contradicted["confidence"] == pytest.approx(0.5)
    assert contradicted["validity"] == "active"


async def test_confirm_and_supports_count_validations(client):
    fact = await store_fact(client, "Ann", "likes", "Ann likes chess")
    assert fact["validation_count"] == 0
    confirmed = (await client.post(f"/v1/facts/{fact['id']}/confirm")).json()
    assert confirmed["validation_count"] == 1
    episode = ref("episode", await store_episode(client, "Ann won a chess game"))
    await post(client, "/v1/links", **link(episode, ref("fact", fact), "supports"))
    assert (await fact_now(client, fact["id"]))["validation_count"] == 2


async def test_storing_the_same_fact_again_counts_a_validation(client):
    await store_fact(client, "Ann", "likes", "Ann likes chess")
    again = await client.post(
        "/v1/facts", json={"subject": "Ann", "predicate": "likes", "content": "Ann likes chess"}
    )
    assert again.status_code == 200
    assert again.json()["validation_count"] == 1


async def test_contradict_call_halves_confidence_and_records_why(client):
    fact = await store_fact(client, "Globex", "office", "Globex has its office in Denver")
    after = await contradict(client, fact["id"], reasoning="they moved to Boulder")
    assert (after["confidence"], after["contradiction_count"]) == (pytest.approx(0.5), 1)
    assert after["effective_confidence"] < fact["effective_confidence"]
    [event] = (await client.get("/v1/events", params={"event_type": "fact_contradicted"})).json()[
        "items"
    ]
    assert event["payload"]["confidence_before"] == pytest.approx(1.0)
    assert event["payload"]["confidence_after"] == pytest.approx(0.5)
    assert event["payload"]["reasoning"] == "they moved to Boulder"


async def test_three_net_contradictions_retract_the_fact(client):
    fact = await store_fact(client, "Globex", "office", "Globex has its office in Denver")
    await contradict(client, fact["id"])
    second = await contradict(client, fact["id"])
    assert second["validity"] == "active"
    third = await contradict(client, fact["id"])
    assert third["validity"] == "retracted"
    assert third["confidence"] == pytest.approx(0.125)
    assert third["recorded_until"] is not None
    events = (await client.get("/v1/events", params={"event_type": "fact_retracted"})).json()
    assert [e["payload"]["memory_id"] for e in events["items"]] == [fact["id"]]
    search = (await client.post("/v1/search", json={"query": "Globex office Denver"})).json()
    assert fact["id"] not in {hit["id"] for hit in search["results"]}


async def test_validations_hold_off_retraction(client):
    fact = await store_fact(client, "Globex", "office", "Globex has its office in Denver")
    await client.post(f"/v1/facts/{fact['id']}/confirm")
    for _ in range(3):
        after = await contradict(client, fact["id"])
    assert (after["validity"], after["contradiction_count"], after["validation_count"]) == (
        "active",
        3,
        1,
    )
    assert (await contradict(client, fact["id"]))["validity"] == "retracted"


async def test_contradicting_a_retracted_fact_is_409_and_changes_nothing(client):
    fact = await store_fact(client, "Ann", "likes", "Ann likes chess")
    await client.post(f"/v1/facts/{fact['id']}/forget")
    response = await client.post(f"/v1/facts/{fact['id']}/contradict")
    assert response.status_code == 409
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (await fact_now(client, fact["id"]))["contradiction_count"] == 0


async def test_contradicting_an_unknown_fact_is_404(client):
    response = await client.post(f"/v1/facts/{uuid.uuid4()}/contradict")
    assert response.status_code == 404


async def test_overlong_reasoning_is_422_naming_it(client):
    fact = await store_fact(client, "Ann", "likes", "Ann likes chess")
    response = await client.post(
        f"/v1/facts/{fact['id']}/contradict", json={"reasoning": "x" * 2001}
    )
    assert response.status_code == 422
    assert "body.reasoning" in {error["field"] for error in response.json()["errors"]}
    assert (await fact_now(client, fact["id"]))["contradiction_count"] == 0


async def test_a_contradicts_link_to_a_superseded_fact_is_stored_and_counts_nothing(client):
    old = await store_fact(client, "Globex", "office", "Globex is in Denver")
    new = await store_fact(client, "Globex", "office", "Globex is in Boulder")
    await post(client, "/v1/links", **link(ref("fact", new), ref("fact", old), "contradicts"))
    shown = await fact_now(client, old["id"])
    assert (shown["validity"], shown["contradiction_count"], shown["confidence"]) == (
        "superseded",
        0,
        pytest.approx(1.0),
    )
