"""With `keyword_context`, an episode of a session is found by keyword through the turns just
before it too."""

import pytest

from app.core.text import CONTEXT_MAX_CHARS
from app.worker.reindex import reindex_all
from tests.support.factories import store_episode
from tests.support.rights import marker_hits

SESSION = "5d0c3f9e-1f3b-4a55-9c57-2a7e1c0b9d42"
TURNS = [
    "Caroline: I went to an LGBTQ support group for the first time yesterday.",
    "Melanie: Oh wow, how did that go?",
    "Caroline: It was really powerful, everyone there was so accepting.",
    "Melanie: I'm baking a lemon cake for the weekend.",
    "Caroline: Yum, save me a slice!",
]


@pytest.fixture(autouse=True)
def keyword_context_on(app, monkeypatch):
    """The app under test has keyword_context on (it is off by default)."""
    monkeypatch.setattr(app.state.settings, "keyword_context", True)


async def keyword_search(client, query, **fields):
    response = await client.post(
        "/v1/search", json={"query": query, "mode": "keyword", "types": ["episode"], **fields}
    )
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def store_turns(client):
    return [
        await store_episode(client, turn, butler="chat", session_id=SESSION) for turn in TURNS
    ]  # one by one: the context comes from stored turns


async def test_the_two_turns_after_a_match_are_found_by_its_words(client):
    await store_turns(client)
    await store_episode(client, TURNS[2], butler="other")  # the same words, no session

    results = await keyword_search(client, "support group")

    assert [(hit["butler"], hit["content"]) for hit in results] == [
        ("chat", TURNS[0]),
        ("chat", TURNS[1]),
        ("chat", TURNS[2]),
    ]


async def test_a_turn_s_own_words_outrank_the_same_words_in_its_context(client):
    await store_turns(client)

    [first, second, *_] = await keyword_search(client, "lemon cake")

    assert (first["content"], second["content"]) == (TURNS[3], TURNS[4])


async def test_a_batch_gives_its_turns_the_words_of_earlier_items(client):
    response = await client.post(
        "/v1/episodes/batch",
        json={
            "items": [{"content": turn, "butler": "chat", "session_id": SESSION} for turn in TURNS]
        },
    )
    assert response.status_code == 201, response.text

    [first, *rest] = await keyword_search(client, "accepting")

    assert first["content"] == TURNS[2]
    assert {hit["content"] for hit in rest} == set(TURNS[3:5])


async def test_a_deleted_turn_s_words_leave_the_turns_after_it(client, db_engine):
    stored = await store_turns(client)
    marker = "5550142"
    noted = await store_episode(
        client, f"Caroline: my new number is {marker}", butler="chat", session_id=SESSION
    )
    after = [
        await store_episode(client, text, butler="chat", session_id=SESSION)
        for text in ("Melanie: saved it!", "Caroline: great, call me tonight")
    ]
    assert [hit["id"] for hit in await keyword_search(client, marker)] == [
        noted["id"],
        after[0]["id"],
        after[1]["id"],
    ]

    response = await client.delete(f"/v1/episodes/{noted['id']}")

    assert response.status_code == 204
    assert await keyword_search(client, marker) == []
    assert await marker_hits(db_engine, marker, "default") == {}
    # The turns after it now read the turns before it, as a reader of the session would.
    found = {hit["id"] for hit in await keyword_search(client, "slice")}
    assert found == {stored[4]["id"], after[0]["id"], after[1]["id"]}


async def test_reindex_gives_turns_stored_without_context_their_neighbours_words(app, client, sql):
    await store_turns(client)
    alone = await store_episode(client, TURNS[2], butler="other")
    await sql("UPDATE episodes SET search_vector = to_tsvector('english', content)")
    assert [hit["content"] for hit in await keyword_search(client, "support group")] == [TURNS[0]]

    assert await reindex_all(app.state.sessionmaker, context_turns=2, keyword_context=True) == len(
        TURNS
    )

    results = await keyword_search(client, "support group")
    assert [hit["content"] for hit in results] == TURNS[:3]
    assert alone["id"] not in {hit["id"] for hit in results}


async def test_a_session_s_first_turn_weighs_its_own_words_like_any_later_turn(client):
    turn = "Caroline: we adopted a puppy from the shelter near the lake last spring"
    first = await store_episode(client, turn, butler="chat", session_id="first")
    await store_episode(client, "Melanie: hi", butler="chat", session_id="second")
    later = await store_episode(client, turn, butler="chat", session_id="second")

    [top, second] = await keyword_search(client, "puppy")

    # The same words; the later turn's document is longer by its neighbour's.
    assert (top["id"], second["id"]) == (first["id"], later["id"])
    assert top["keyword_rank"] == 1


async def test_reindex_with_keyword_context_off_gives_turns_their_own_words_only(app, client):
    await store_turns(client)

    await reindex_all(app.state.sessionmaker, context_turns=2, keyword_context=False)

    assert [hit["content"] for hit in await keyword_search(client, "support group")] == [TURNS[0]]


async def test_a_long_turn_is_found_by_its_own_words_only(client):
    question = await store_episode(
        client,
        "Caroline: which kayak should I rent at the lake?",
        butler="chat",
        session_id=SESSION,
    )
    long_reply = await store_episode(
        client,
        "Melanie: " + "Here is what I would look at before renting anything. " * 8,
        butler="chat",
        session_id=SESSION,
    )
    short_reply = await store_episode(
        client, "Caroline: thanks, that helps!", butler="chat", session_id=SESSION
    )
    assert len(long_reply["content"]) > CONTEXT_MAX_CHARS

    found = [hit["id"] for hit in await keyword_search(client, "kayak")]

    # A long turn stands on its own; a short one is read with the turns before it.
    assert found == [question["id"], short_reply["id"]]
