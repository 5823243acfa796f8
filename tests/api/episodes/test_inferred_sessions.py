"""Episodes stored without a session_id are placed in sessions by the gap rule."""

import json
import uuid

import pytest

from app.worker.session_backfill import infer_missing_sessions
from tests.support.factories import store_episode
from tests.support.http import post
from tests.support.rights import erase

GAP = 15  # minutes, the default of episode_session_gap_minutes


@pytest.fixture(autouse=True)
def gap_of_15_minutes(app, monkeypatch):
    """The app under test infers sessions with a 15-minute gap."""
    monkeypatch.setattr(app.state.settings, "episode_session_gap_minutes", GAP)


def butler() -> str:
    return f"chat-{uuid.uuid4().hex[:8]}"


async def at(client, when: str, name: str, **fields) -> dict:
    return await store_episode(
        client, f"turn at {when}", butler=name, occurred_at=f"2024-03-01T{when}:00Z", **fields
    )


async def test_turns_within_the_gap_share_a_session_and_a_longer_gap_starts_one(client):
    name = butler()
    first = await at(client, "10:00", name)
    second = await at(client, "10:14", name)
    third = await at(client, "10:30", name)
    assert first["session_id"] is None and first["inferred_session"] is not None
    assert second["inferred_session"] == first["inferred_session"]
    assert third["inferred_session"] != first["inferred_session"]
    fetched = (await client.get(f"/v1/episodes/{second['id']}")).json()
    assert fetched["inferred_session"] == first["inferred_session"]
    assert fetched["session_id"] is None


async def test_different_butlers_never_share_a_session(client):
    one = await at(client, "10:00", butler())
    two = await at(client, "10:01", butler())
    assert one["inferred_session"] != two["inferred_session"]


async def test_an_explicit_session_id_wins(client):
    name = butler()
    before = await at(client, "10:00", name)
    given = await at(client, "10:01", name, session_id="visit-7")
    after = await at(client, "10:02", name)
    assert given["session_id"] == "visit-7" and given["inferred_session"] is None
    assert after["inferred_session"] == before["inferred_session"]


async def test_a_batch_chains_in_time_order_and_to_stored_turns(client):
    name = butler()
    stored = await at(client, "09:00", name)
    items = [
        {"content": f"turn {when}", "butler": name, "occurred_at": f"2024-03-01T{when}:00Z"}
        for when in ("09:20", "09:05", "09:12", "11:00", "10:58")
    ]
    rows = (await post(client, "/v1/episodes/batch", items=items))["items"]
    sessions = [row["inferred_session"] for row in rows]
    # 09:05 joins 09:00 (stored), 09:12 and 09:20 chain on; 10:58 and 11:00 are a new one.
    assert sessions[:3] == [stored["inferred_session"]] * 3
    assert sessions[3] == sessions[4] != stored["inferred_session"]


async def test_a_turn_arriving_between_stored_ones_joins_the_one_within_the_gap(client):
    name = butler()
    early = await at(client, "08:00", name)
    late = await at(client, "09:00", name)
    assert early["inferred_session"] != late["inferred_session"]
    near_late = await at(client, "08:50", name)
    near_early = await at(client, "08:10", name)
    alone = await at(client, "08:30", name)
    assert near_late["inferred_session"] == late["inferred_session"]
    assert near_early["inferred_session"] == early["inferred_session"]
    assert alone["inferred_session"] not in (early["inferred_session"], late["inferred_session"])


async def test_a_gap_of_0_turns_inference_off(client, app, monkeypatch):
    monkeypatch.setattr(app.state.settings, "episode_session_gap_minutes", 0)
    name = butler()
    first = await at(client, "10:00", name)
    second = await at(client, "10:01", name)
    assert first["inferred_session"] is None and second["inferred_session"] is None


async def test_search_neighbours_stay_inside_the_inferred_session(client):
    name = butler()
    await post(
        client,
        "/v1/episodes/batch",
        items=[
            {"content": text, "butler": name, "occurred_at": f"2024-03-01T{when}:00Z"}
            for text, when in (
                ("Ann: breakfast plans", "07:00"),
                ("Bo: the opening line about kayaks", "12:00"),
                ("Ann: sounds fun", "12:02"),
            )
        ],
    )
    response = await client.post(
        "/v1/search",
        json={
            "query": "opening line kayaks",
            "types": ["episode"],
            "scope": name,
            "limit": 1,
            "neighbours": 5,
        },
    )
    [hit] = response.json()["results"]
    assert hit["content"] == "Bo: the opening line about kayaks"
    assert [turn["content"] for turn in hit["neighbours"]] == ["Ann: sounds fun"]


async def test_an_inferred_session_is_listed_filtered_and_erased_by_its_id(client, app, settings):
    name = butler()
    first = await at(client, "10:00", name)
    second = await at(client, "10:05", name)
    later = await at(client, "12:00", name)
    given = await at(client, "10:02", name, session_id="visit-9")
    session = first["inferred_session"]
    assert second["inferred_session"] == session != later["inferred_session"]

    listed = (await client.get("/v1/episodes", params={"session_id": session})).json()
    assert {e["id"] for e in listed["items"]} == {first["id"], second["id"]}
    explicit = (await client.get("/v1/episodes", params={"session_id": "visit-9"})).json()
    assert [e["id"] for e in explicit["items"]] == [given["id"]]
    either = json.dumps({"session_id": {"$in": [session, "visit-9"]}})
    filtered = (await client.get("/v1/episodes", params={"butler": name, "filter": either})).json()
    assert {e["id"] for e in filtered["items"]} == {first["id"], second["id"], given["id"]}
    found = (
        await client.post(
            "/v1/search",
            json={
                "query": "turn at",
                "types": ["episode"],
                "scope": name,
                "filter": {"session_id": session},
            },
        )
    ).json()["results"]
    assert {hit["id"] for hit in found} == {first["id"], second["id"]}

    await erase(client, app, settings, session_id=session)
    left = (await client.get("/v1/episodes", params={"butler": name})).json()
    assert {e["id"] for e in left["items"]} == {later["id"], given["id"]}


async def test_episodes_stored_before_inference_are_placed_by_the_same_rule(
    app, client, monkeypatch
):
    monkeypatch.setattr(app.state.settings, "episode_session_gap_minutes", 0)
    name = butler()
    early, close, late = [await at(client, when, name) for when in ("10:00", "10:10", "11:00")]
    given = await at(client, "10:05", name, session_id="given")
    assert {turn["inferred_session"] for turn in (early, close, late, given)} == {None}
    monkeypatch.setattr(app.state.settings, "episode_session_gap_minutes", GAP)
    newer = await at(client, "11:05", name)

    placed = await infer_missing_sessions(app.state.sessionmaker, gap_minutes=GAP)

    assert placed >= 3
    now = {
        turn["id"]: (await client.get(f"/v1/episodes/{turn['id']}")).json()
        for turn in (early, close, late, given)
    }
    assert now[early["id"]]["inferred_session"] == now[close["id"]]["inferred_session"]
    # 50 minutes after the turn before it, 5 before a turn stored with inference on.
    assert now[late["id"]]["inferred_session"] == newer["inferred_session"]
    assert now[early["id"]]["inferred_session"] != newer["inferred_session"]
    assert now[given["id"]]["inferred_session"] is None
    listed = (
        await client.get("/v1/episodes", params={"session_id": newer["inferred_session"]})
    ).json()["items"]
    assert {turn["id"] for turn in listed} == {late["id"], newer["id"]}
    assert await infer_missing_sessions(app.state.sessionmaker, gap_minutes=GAP) == 0
