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
    stored = await store_episode(client, "Caroline: I went to a support group", occurred_at=when)
    assert parse(stored["occurred_at"]) == parse(when)
    fetched = (await client.get(f"/v1/episodes/{stored['id']}")).json()
    listed = (await client.get("/v1/episodes")).json()["items"]
    found = (await client.post("/v1/search", json={"query": "support group"})).json()
    assert {
        parse(fetched["occurred_at"]),
        parse(listed[0]["occurred_at"]),
        parse(found["results"][0]["occurred_at"]),
    } == {parse(when)}


async def test_the_ttl_counts_from_storage_not_from_occurred_at(client):
    stored = await store_episode(client, occurred_at="2020-01-01T00:00:00Z")
    ttl = parse(stored["expires_at"]) - parse(stored["created_at"])
    assert abs(ttl - timedelta(days=7)) < timedelta(seconds=5)


async def test_a_number_is_not_a_time(client):
    response = await client.post(
        "/v1/episodes", json={"content": "x", "butler": "chat", "occurred_at": 0}
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["body.occurred_at"]


async def test_a_time_without_zone_is_a_422_naming_the_field(client):
    response = await client.post(
        "/v1/episodes/batch",
        json={"items": [{"content": "x", "butler": "chat", "occurred_at": "2023-05-08T13:56:00"}]},
    )
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
    turns = [
        "Mel: hi",
        "Caroline: hey",
        "Mel: how was the weekend?",
        "Caroline: I adopted a rescue dog named Biscuit",
        "Mel: what breed?",
        "Caroline: a beagle mix",
        "Mel: lovely",
    ]
    await post(
        client,
        "/v1/episodes/batch",
        items=[{"content": text, "butler": "chat", "session_id": session} for text in turns],
    )
    await store_episode(client, "Jon: my dog likes the beach", session_id=other)
    response = await client.post(
        "/v1/search",
        json={"query": "rescue dog Biscuit", "types": ["episode"], "limit": 1, "neighbours": 2},
    )
    [hit] = response.json()["results"]
    assert hit["content"] == turns[3]
    assert [turn["content"] for turn in hit["neighbours"]] == turns[1:3] + turns[4:6]


async def test_neighbours_are_only_sent_on_request(client):
    await store_episode(client, "Mel: first", session_id=str(uuid.uuid4()))
    response = await client.post("/v1/search", json={"query": "first"})
    assert response.json()["results"][0]["neighbours"] == []


async def test_neighbours_stop_at_the_session_edges(client):
    session = str(uuid.uuid4())
    await post(
        client,
        "/v1/episodes/batch",
        items=[
            {"content": text, "butler": "chat", "session_id": session}
            for text in ("Ann: the opening line about kayaks", "Bo: second", "Ann: third")
        ],
    )
    response = await client.post(
        "/v1/search",
        json={"query": "opening line kayaks", "types": ["episode"], "limit": 1, "neighbours": 5},
    )
    [hit] = response.json()["results"]
    assert [turn["content"] for turn in hit["neighbours"]] == ["Bo: second", "Ann: third"]


async def hikes(client):
    """Three near-identical hikes at different times."""
    for when, place in (
        ("2023-03-12T10:00:00Z", "Mount Tam"),
        ("2023-05-08T10:00:00Z", "Mount Diablo"),
        ("2023-06-20T10:00:00Z", "Half Dome"),
    ):
        await store_episode(
            client, f"Caroline: we went on a long hike up {place}", occurred_at=when
        )


async def test_a_time_expression_boosts_the_episodes_inside_its_window(client):
    await hikes(client)
    response = (
        await client.post(
            "/v1/search",
            json={"query": "which hike did Caroline do in May 2023", "types": ["episode"]},
        )
    ).json()
    assert response["time_window"]["expression"] == "may 2023"
    assert response["time_window"]["applied_as"] == "boost"
    top = response["results"][0]
    assert "Mount Diablo" in top["content"] and top["time_rank"] == 1
    assert [hit["time_rank"] for hit in response["results"][1:]] == [None, None]


async def test_as_a_filter_the_window_keeps_only_the_episodes_inside_it(client):
    await hikes(client)
    response = (
        await client.post(
            "/v1/search",
            json={"query": "hike in June 2023", "types": ["episode"], "time_mode": "filter"},
        )
    ).json()
    assert response["time_window"]["applied_as"] == "filter"
    assert [hit["content"] for hit in response["results"]] == [
        "Caroline: we went on a long hike up Half Dome"
    ]


async def test_relative_expressions_are_read_against_the_reference_time(client):
    await hikes(client)
    response = (
        await client.post(
            "/v1/search",
            json={
                "query": "the long hike yesterday",
                "types": ["episode"],
                "mode": "semantic",
                "reference_time": "2023-05-09T09:00:00+00:00",
            },
        )
    ).json()
    assert response["time_window"]["start"].startswith("2023-05-08")
    assert ["Mount Diablo" in hit["content"] for hit in response["results"]] == [True, False, False]
    assert response["results"][0]["time_rank"] == 1


async def test_time_reading_can_be_switched_off_and_is_absent_without_an_expression(client):
    await hikes(client)
    off = (
        await client.post("/v1/search", json={"query": "hike in May 2023", "time_mode": "off"})
    ).json()
    plain = (await client.post("/v1/search", json={"query": "a long hike"})).json()
    assert off["time_window"]["applied_as"] == "off" and plain["time_window"] is None
    assert len(off["results"]) == 3
    assert {hit["time_rank"] for hit in off["results"]} == {None}
