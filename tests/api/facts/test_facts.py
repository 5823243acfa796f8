"""Facts through HTTP: defaults, permanence, supersession, confirm, forget, history."""

import math
import uuid

import pytest

from app.repositories import facts as fact_rows
from tests.support.factories import create_entity, store_fact


async def test_new_fact_is_active_with_full_confidence_and_defaults(client, sql):
    fact = await store_fact(client)
    assert fact["validity"] == "active"
    assert fact["confidence"] == 1.0
    assert fact["importance"] == 5.0
    assert fact["permanence"] == "standard"
    assert fact["decay_rate"] == 0.008
    assert fact["scope"] == "global"
    assert fact["tags"] == [] and fact["metadata"] == {}
    assert fact["reference_count"] == 0
    assert fact["supersedes_id"] is None and fact["entity_id"] is None
    assert fact["last_confirmed_at"] == fact["created_at"]
    assert fact["effective_confidence"] == pytest.approx(1.0, abs=1e-6)
    [row] = await sql(
        "SELECT vector_dims(embedding) AS dims, search_vector::text AS sv "
        "FROM facts WHERE id = :id",
        id=uuid.UUID(fact["id"]),
    )
    assert row["dims"] == 384
    assert "'boston'" in row["sv"] and "'live'" in row["sv"]


@pytest.mark.parametrize(
    ("permanence", "rate"),
    [
        ("permanent", 0.0),
        ("stable", 0.002),
        ("standard", 0.008),
        ("volatile", 0.03),
        ("ephemeral", 0.1),
    ],
)
async def test_permanence_sets_decay_rate(client, permanence, rate):
    fact = await store_fact(client, permanence=permanence)
    assert fact["decay_rate"] == rate


async def test_invalid_permanence_is_422_listing_levels(client):
    response = await client.post(
        "/v1/facts",
        json={"subject": "a", "predicate": "b", "content": "c", "permanence": "forever"},
    )
    assert response.status_code == 422
    error = response.json()["errors"][0]
    assert error["field"] == "body.permanence"
    for level in ("permanent", "stable", "standard", "volatile", "ephemeral"):
        assert level in error["message"]


async def test_new_fact_supersedes_same_subject_predicate_in_scope(client, sql):
    old = await store_fact(client, content="Caroline lives in Boston")
    new = await store_fact(client, content="Caroline lives in Denver")
    assert new["supersedes_id"] == old["id"]
    old_now = (await client.get(f"/v1/facts/{old['id']}")).json()
    assert old_now["validity"] == "superseded"
    links = await sql(
        "SELECT source_type, source_id, target_type, target_id, relation FROM memory_links"
    )
    assert [dict(link) for link in links] == [
        {
            "source_type": "fact",
            "source_id": uuid.UUID(new["id"]),
            "target_type": "fact",
            "target_id": uuid.UUID(old["id"]),
            "relation": "supersedes",
        }
    ]
    events = await sql(
        "SELECT event_type, payload FROM memory_events WHERE event_type = 'fact_superseded'"
    )
    assert events[0]["payload"]["memory_id"] == old["id"]
    assert events[0]["payload"]["superseded_by"] == new["id"]


async def test_fact_in_other_scope_or_predicate_does_not_supersede(client):
    first = await store_fact(client)
    await store_fact(client, scope="travel")
    await store_fact(client, predicate="works_at", content="Caroline works at MIT")
    still = (await client.get(f"/v1/facts/{first['id']}")).json()
    assert still["validity"] == "active"


async def test_entity_fact_supersedes_by_entity_scope_predicate(client):
    entity_id = (await create_entity(client))["id"]
    old = await store_fact(client, subject="Caro", entity_id=entity_id)
    new = await store_fact(
        client, subject="Caroline M.", content="She lives in Denver", entity_id=entity_id
    )
    assert new["supersedes_id"] == old["id"]
    assert new["entity_id"] == entity_id
    assert (await client.get(f"/v1/facts/{old['id']}")).json()["validity"] == "superseded"


async def test_entity_fact_and_plain_fact_keys_are_independent(client):
    entity_id = (await create_entity(client))["id"]
    plain = await store_fact(client)
    anchored = await store_fact(client, entity_id=entity_id)
    assert anchored["supersedes_id"] is None
    assert (await client.get(f"/v1/facts/{plain['id']}")).json()["validity"] == "active"


async def test_unknown_entity_is_422_and_nothing_stored(client, sql):
    response = await client.post(
        "/v1/facts",
        json={"subject": "a", "predicate": "b", "content": "c", "entity_id": str(uuid.uuid4())},
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "entity_id"
    assert "does not exist" in response.json()["detail"]
    [row] = await sql("SELECT count(*) AS n FROM facts")
    assert row["n"] == 0


async def test_merged_entity_is_rejected(client, sql):
    target = (await create_entity(client, "Caroline"))["id"]
    source = (await create_entity(client, "Caro"))["id"]
    await sql(
        "UPDATE entities SET merged_into_id = :t WHERE id = :s",
        t=uuid.UUID(target),
        s=uuid.UUID(source),
    )
    response = await client.post(
        "/v1/facts", json={"subject": "a", "predicate": "b", "content": "c", "entity_id": source}
    )
    assert response.status_code == 422
    assert target in response.json()["detail"]


async def test_unknown_source_episode_is_422(client):
    response = await client.post(
        "/v1/facts",
        json={
            "subject": "a",
            "predicate": "b",
            "content": "c",
            "source_episode_id": str(uuid.uuid4()),
        },
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "source_episode_id"


async def test_fact_created_event_written(client, sql):
    fact = await store_fact(client)
    events = await sql("SELECT event_type, tenant_id, payload FROM memory_events")
    assert [(e["event_type"], e["tenant_id"]) for e in events] == [("fact_created", "default")]
    assert events[0]["payload"] == {"memory_type": "fact", "memory_id": fact["id"]}


async def test_get_fact_bumps_reference(client):
    fact = await store_fact(client)
    assert (await client.get(f"/v1/facts/{fact['id']}")).json()["reference_count"] == 1
    again = (await client.get(f"/v1/facts/{fact['id']}")).json()
    assert again["reference_count"] == 2
    assert again["last_referenced_at"] is not None


async def test_effective_confidence_reflects_decay_since_confirmation(client, sql):
    fact = await store_fact(client, permanence="volatile")
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '10 days' WHERE id = :id",
        id=uuid.UUID(fact["id"]),
    )
    seen = (await client.get(f"/v1/facts/{fact['id']}")).json()
    assert seen["effective_confidence"] == pytest.approx(math.exp(-0.03 * 10), rel=1e-4)


async def test_confirm_resets_decay_timer_and_clears_fading(client, sql):
    fact = await store_fact(client, permanence="ephemeral")
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '20 days', "
        "fading_since = now() WHERE id = :id",
        id=uuid.UUID(fact["id"]),
    )
    confirmed = (await client.post(f"/v1/facts/{fact['id']}/confirm")).json()
    assert confirmed["effective_confidence"] == pytest.approx(1.0, abs=1e-5)
    assert confirmed["last_confirmed_at"] > fact["last_confirmed_at"]
    assert confirmed["fading"] is False
    [event] = await sql("SELECT payload FROM memory_events WHERE event_type = 'fact_confirmed'")
    assert event["payload"]["memory_id"] == fact["id"]


async def test_confirming_a_superseded_fact_is_409(client):
    old = await store_fact(client)
    await store_fact(client, content="Caroline lives in Denver")
    response = await client.post(f"/v1/facts/{old['id']}/confirm")
    assert response.status_code == 409
    assert "superseded" in response.json()["detail"]


async def test_forget_retracts_fact_and_hides_it_from_listing(client, sql):
    fact = await store_fact(client)
    forgotten = (await client.post(f"/v1/facts/{fact['id']}/forget")).json()
    assert forgotten["validity"] == "retracted"
    assert (await client.get("/v1/facts")).json()["items"] == []
    retracted = (await client.get("/v1/facts", params={"validity": "retracted"})).json()["items"]
    assert [f["id"] for f in retracted] == [fact["id"]]
    again = await client.post(f"/v1/facts/{fact['id']}/forget")
    assert again.status_code == 200
    [row] = await sql("SELECT count(*) AS n FROM memory_events WHERE event_type = 'fact_forgotten'")
    assert row["n"] == 1


async def test_retracted_key_can_be_stored_again_without_supersession(client):
    fact = await store_fact(client)
    await client.post(f"/v1/facts/{fact['id']}/forget")
    fresh = await store_fact(client, content="Caroline lives in Austin")
    assert fresh["supersedes_id"] is None


async def test_history_lists_every_version_newest_first(client):
    v1 = await store_fact(client, content="Caroline lives in Boston")
    v2 = await store_fact(client, content="Caroline lives in Denver")
    v3 = await store_fact(client, content="Caroline lives in Austin")
    for fact in (v1, v2, v3):
        history = (await client.get(f"/v1/facts/{fact['id']}/history")).json()
        assert [f["id"] for f in history] == [v3["id"], v2["id"], v1["id"]]
        assert [f["validity"] for f in history] == ["active", "superseded", "superseded"]


async def test_history_of_a_long_chain_comes_back_whole_and_in_order(client):
    versions = [await store_fact(client, content=f"Caroline lives in town {i}") for i in range(30)]
    newest_first = [v["id"] for v in reversed(versions)]
    for fact in (versions[0], versions[14], versions[-1]):
        history = (await client.get(f"/v1/facts/{fact['id']}/history")).json()
        assert [f["id"] for f in history] == newest_first
        assert [f["validity"] for f in history] == ["active"] + ["superseded"] * 29


async def test_history_reads_at_most_max_chain_versions_each_way(client, monkeypatch):
    versions = [await store_fact(client, content=f"Caroline lives in town {i}") for i in range(9)]
    monkeypatch.setattr(fact_rows, "MAX_CHAIN", 3)
    history = (await client.get(f"/v1/facts/{versions[4]['id']}/history")).json()
    # Three newer versions, the fact itself, three older ones.
    assert [f["id"] for f in history] == [v["id"] for v in reversed(versions[1:8])]


async def test_history_of_unknown_fact_is_404(client):
    assert (await client.get(f"/v1/facts/{uuid.uuid4()}/history")).status_code == 404


async def test_list_filters_by_subject_predicate_scope_entity(client):
    entity_id = (await create_entity(client))["id"]
    a = await store_fact(client, subject="Mel", predicate="likes", content="Mel likes pottery")
    b = await store_fact(
        client, subject="Mel", predicate="owns", content="Mel owns a dog", scope="pets"
    )
    c = await store_fact(
        client, subject="Jon", predicate="likes", content="Jon likes jazz", entity_id=entity_id
    )

    async def ids(**params):
        return {f["id"] for f in (await client.get("/v1/facts", params=params)).json()["items"]}

    assert await ids(subject="Mel") == {a["id"], b["id"]}
    assert await ids(predicate="likes") == {a["id"], c["id"]}
    assert await ids(scope="pets") == {b["id"]}
    assert await ids(entity_id=entity_id) == {c["id"]}


async def test_concurrent_writes_of_one_key_leave_exactly_one_active(client, sql):
    import asyncio

    responses = await asyncio.gather(
        *[
            client.post(
                "/v1/facts",
                json={
                    "subject": "Caroline",
                    "predicate": "mood",
                    "content": f"Caroline feels {mood}",
                },
            )
            for mood in ("happy", "tired", "calm", "busy")
        ]
    )
    assert [r.status_code for r in responses] == [201] * 4
    rows = await sql("SELECT validity, count(*) AS n FROM facts GROUP BY validity")
    assert {r["validity"]: r["n"] for r in rows} == {"active": 1, "superseded": 3}
    [links] = await sql("SELECT count(*) AS n FROM memory_links WHERE relation = 'supersedes'")
    assert links["n"] == 3
