"""Episodes' own time (occurred_at), their storage order (sequence) and neighbouring turns."""

import uuid
from datetime import datetime, timedelta

from tests.support.factories import store_episode
from tests.support.http import post


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value)


async def test_occurred_at_defaults_to_the_time_of_storage(client):
    episode = await store_episode(client)
    assert parse(episode["occurred_at"]) == parse(episode["created_at"])


async def test_occurred_at_is_kept_and_returned_everywhere(client):
    when = "2023-05-08T13:56:00+02:00"
    stored = await store_episode(client, "Caroline: I went to a support group",
                                 occurred_at=when)
    assert parse(stored["occurred_at"]) == parse(when)
    fetched = (await client.get(f"/v1/episodes/{stored['id']}")).json()
    listed = (await client.get("/v1/episodes")).json()["items"]
    found = (await client.post("/v1/search", json={"query": "support group"})).json()
    assert {parse(fetched["occurred_at"]), parse(listed[0]["occurred_at"]),
            parse(found["results"][0]["occurred_at"])} == {parse(when)}


async def test_the_ttl_counts_from_storage_not_from_occurred_at(client):
    stored = await store_episode(client, occurred_at="2020-01-01T00:00:00Z")
    ttl = parse(stored["expires_at"]) - parse(stored["created_at"])
    assert abs(ttl - timedelta(days=7)) < timedelta(seconds=5)


async def test_a_time_without_zone_is_a_422_naming_the_field(client):
    response = await client.post("/v1/episodes/batch", json={"items": [
        {"content": "x", "butler": "chat", "occurred_at": "2023-05-08T13:56:00"}]})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"].endswith("occurred_at")


async def test_a_batch_keeps_its_order_in_sequence(client):
    items = [{"content": f"turn {i}", "butler": "chat"} for i in range(5)]
    stored = (await post(client, "/v1/episodes/batch", items=items))["items"]
    sequences = [item["sequence"] for item in stored]
    assert sequences == sorted(sequences) and len(set(sequences)) == 5
    assert [item["content"] for item in stored] == [f"turn {i}" for i in range(5)]


async def test_search_returns_the_neighbouring_turns_of_the_same_session(client):
    session, other = str(uuid.uuid4()), str(uuid.uuid4())
    turns = ["Mel: hi", "Caroline: hey", "Mel: how was the weekend?",
             "Caroline: I adopted a rescue dog named Biscuit", "Mel: what breed?",
             "Caroline: a beagle mix", "Mel: lovely"]
    await post(client, "/v1/episodes/batch", items=[
        {"content": text, "butler": "chat", "session_id": session} for text in turns])
    await store_episode(client, "Jon: my dog likes the beach", session_id=other)
    response = await client.post("/v1/search", json={
        "query": "rescue dog Biscuit", "types": ["episode"], "limit": 1, "neighbours": 2})
    [hit] = response.json()["results"]
    assert hit["content"] == turns[3]
    assert [turn["content"] for turn in hit["neighbours"]] == turns[1:3] + turns[4:6]


async def test_neighbours_are_only_sent_on_request(client):
    await store_episode(client, "Mel: first", session_id=str(uuid.uuid4()))
    response = await client.post("/v1/search", json={"query": "first"})
    assert response.json()["results"][0]["neighbours"] == []


async def test_neighbours_stop_at_the_session_edges(client):
    session = str(uuid.uuid4())
    await post(client, "/v1/episodes/batch", items=[
        {"content": text, "butler": "chat", "session_id": session}
        for text in ("Ann: the opening line about kayaks", "Bo: second", "Ann: third")])
    response = await client.post("/v1/search", json={
        "query": "opening line kayaks", "types": ["episode"], "limit": 1, "neighbours": 5})
    [hit] = response.json()["results"]
    assert [turn["content"] for turn in hit["neighbours"]] == ["Bo: second", "Ann: third"]
