"""GET /v1/events: the audit stream names the key behind every event and filters by memory,
type and time."""

from datetime import UTC, datetime, timedelta

import httpx

from app.main import create_app
from app.worker import worker
from tests.support.factories import store_episode, store_fact
from tests.support.jobs import job_context
from tests.support.rights import key_id_of


async def test_every_event_of_a_request_names_the_callers_key(client, sql):
    fact = await store_fact(client)
    await client.post(f"/v1/facts/{fact['id']}/confirm")

    page = (await client.get("/v1/events", params={"memory_id": fact["id"]})).json()

    key_id = await key_id_of(sql, "default")
    assert [event["event_type"] for event in page["items"]] == ["fact_confirmed", "fact_created"]
    assert {event["actor_key_id"] for event in page["items"]} == {key_id}
    assert {event["actor"] for event in page["items"]} == {f"key:{key_id}"}


async def test_a_jobs_events_name_the_job_and_the_key_that_queued_it(app, settings, client, sql):
    await store_fact(client, permanence="ephemeral")
    await sql("UPDATE facts SET last_confirmed_at = now() - interval '400 days'")
    queued = (await client.post("/v1/jobs/decay")).json()
    await worker.drain(job_context(app, settings))

    page = (await client.get("/v1/events", params={"event_type": "fact_expired"})).json()

    [event] = page["items"]
    assert event["actor_key_id"] == await key_id_of(sql, "default")
    assert event["payload"]["job_id"] == queued["id"]


async def test_events_are_filtered_by_time_and_paginated(client, sql):
    for n in range(3):
        await store_episode(client, f"note {n}")
    await sql(
        "UPDATE memory_events SET created_at = now() - interval '2 days' "
        "WHERE payload ->> 'memory_id' IN (SELECT CAST(id AS text) FROM episodes "
        "WHERE content = 'note 0')"
    )
    since = (datetime.now(UTC) - timedelta(days=1)).isoformat()

    first = (await client.get("/v1/events", params={"since": since, "limit": 1})).json()
    second = (
        await client.get(
            "/v1/events", params={"since": since, "limit": 1, "cursor": first["next_cursor"]}
        )
    ).json()
    older = (await client.get("/v1/events", params={"until": since})).json()

    assert len(first["items"]) == len(second["items"]) == 1
    assert second["next_cursor"] is None
    assert first["items"][0]["id"] != second["items"][0]["id"]
    assert len(older["items"]) == 1


async def test_a_deleted_memory_keeps_only_its_tombstone(client):
    episode = await store_episode(client)
    await client.delete(f"/v1/episodes/{episode['id']}")

    page = (await client.get("/v1/events", params={"memory_id": episode["id"]})).json()

    assert [event["event_type"] for event in page["items"]] == ["episode_deleted"]
    assert set(page["items"][0]["payload"]) == {"memory_type", "memory_id", "deleted_ids"}


async def test_bad_filters_are_422_naming_the_field(client):
    naive = await client.get("/v1/events", params={"since": "2026-01-01T00:00:00"})
    backwards = await client.get(
        "/v1/events", params={"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}
    )
    assert naive.status_code == backwards.status_code == 422
    assert naive.json()["errors"][0]["field"] == "query.since"
    assert backwards.json()["errors"][0]["field"] == "until"


async def test_a_number_is_not_a_time(client):
    response = await client.get("/v1/events", params={"until": "0.5"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.until"


async def test_with_authentication_disabled_events_are_anonymous(settings, sql):
    loopback = settings.model_copy(update={"host": "127.0.0.1", "auth_disabled": True})
    app = create_app(loopback)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            await store_episode(http, "no key here")
            page = (await http.get("/v1/events")).json()
    [event] = page["items"]
    assert (event["actor"], event["actor_key_id"]) == ("anonymous", None)
