"""Long content: passages make text past the model's window searchable and named in hits."""

import json

import numpy as np

from app.core.text import context_text, split_passages
from app.services import embeddings
from app.worker.reembed import reembed_all
from tests.support.factories import store_episode, store_rule

FILLER = [
    "We talked about the weather in the valley and how the autumn rain came early this year.",
    "My sister is learning to bake sourdough bread and keeps sending photos of her loaves.",
    "The football match on Saturday went to extra time and the crowd stayed until the end.",
    "I repainted the kitchen cupboards a pale green colour over the long weekend.",
    "Our book club is reading a novel about a lighthouse keeper on a remote island.",
    "The train into the city was delayed twice because of signal problems near the bridge.",
    "We planted tomatoes, basil and two rows of lettuce in the raised beds by the fence.",
    "The neighbours adopted a grey kitten that likes to sleep on our porch in the sun.",
]
KEY_SENTENCE = "The spare house key is hidden under the blue flowerpot next to the garage door."


def long_text() -> str:
    """About 3,000 characters of chat with the one useful sentence at the very end."""
    return " ".join(FILLER * 4) + " " + KEY_SENTENCE


async def search(client, query, **fields):
    response = await client.post("/v1/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def test_a_sentence_at_the_end_of_a_long_episode_is_found_by_meaning(client):
    content = long_text()
    long_one = await store_episode(client, content)
    # Other butlers: stored after it in its own, they would be read after it (their context).
    await store_episode(client, "We bought a new doormat for the front entrance.", butler="home")
    await store_episode(client, "The garage roof needs new tiles before winter.", butler="garage")

    [first, *_] = await search(
        client, "where is the spare key hidden?", mode="semantic", types=["episode"]
    )

    assert first["id"] == long_one["id"]
    passage = first["passage"]
    assert passage is not None and passage["index"] > 0
    assert KEY_SENTENCE in content[passage["start"] : passage["end"]]
    assert first["similarity"] == passage["similarity"] > 0.4


async def test_a_scoped_search_finds_passages_of_that_scope_only(client, sql):
    home = await store_episode(client, long_text(), butler="home")
    work = await store_episode(client, long_text(), butler="work")
    rule = await store_rule(client, long_text(), scope="global")
    rows = await sql("SELECT DISTINCT coalesce(episode_id, rule_id) AS owner, scope FROM passages")
    assert {(str(row["owner"]), row["scope"]) for row in rows} == {
        (home["id"], "home"),
        (work["id"], "work"),
        (rule["id"], "global"),
    }

    found = await search(
        client,
        "where is the spare key hidden?",
        mode="semantic",
        scope="home",
        types=["episode", "rule"],
    )

    assert {hit["id"] for hit in found} == {home["id"], rule["id"]}
    assert all(hit["passage"] is not None for hit in found)


async def test_short_content_has_no_passage_in_hits(client):
    await store_episode(client, KEY_SENTENCE)

    [hit] = await search(client, "where is the spare key hidden?", types=["episode"])

    assert hit["passage"] is None
    assert hit["similarity"] > 0.4


async def test_long_rules_are_searchable_by_their_last_passage(client):
    rule = await store_rule(
        client,
        " ".join(FILLER * 3) + " Always deploy the service on "
        "Tuesday mornings after the database backup has finished.",
    )

    [first, *_] = await search(
        client, "when should we deploy the service", types=["rule"], mode="semantic"
    )

    assert first["id"] == rule["id"] and first["passage"]["index"] > 0


async def test_reembed_rebuilds_the_passages_of_stale_memories(client, sql, app):
    long_one = await store_episode(client, long_text())
    [before] = await sql(
        "SELECT count(*) AS n FROM passages WHERE episode_id = :id", id=long_one["id"]
    )
    assert before["n"] >= 4
    # What mem_011 leaves for memories stored before passages existed.
    await sql("DELETE FROM passages")
    await sql("UPDATE episodes SET embedding_version_id = NULL")

    counts = await reembed_all(app.state.sessionmaker, app.state.embedder)

    assert counts["episodes"] == 1
    [after] = await sql(
        "SELECT count(*) AS n, min(ordinal) AS first, "
        "max(end_char) AS last_char FROM passages WHERE episode_id = :id",
        id=long_one["id"],
    )
    assert after["n"] == before["n"] and after["first"] == 0
    assert after["last_char"] == len(long_text())
    [first, *_] = await search(client, "where is the spare key hidden?", mode="semantic")
    assert first["id"] == long_one["id"]


async def test_a_batch_whose_passages_take_several_statements_stores_every_one(
    client, sql, app, monkeypatch
):
    monkeypatch.setattr(embeddings, "PASSAGE_ROWS_PER_STATEMENT", 3)
    texts = [long_text(), "Before the rest. " + long_text(), long_text() + " The end."]
    response = await client.post(
        "/v1/episodes/batch",
        json={"items": [{"content": text, "butler": "notes"} for text in texts]},
    )
    assert response.status_code == 201, response.text
    ids = [item["id"] for item in response.json()["items"]]

    rows = await sql(
        "SELECT episode_id, ordinal, start_char, end_char FROM passages "
        "WHERE kind = 'window' ORDER BY episode_id, ordinal"
    )

    embedder = app.state.embedder
    expected = {
        (episode_id, ordinal, start, end)
        for episode_id, text in zip(ids, texts, strict=True)
        for ordinal, (start, end) in enumerate(
            split_passages(text, size=embedder.passage_chars, overlap=embedder.passage_overlap)
        )
    }
    assert len(expected) > 3 * 3
    assert {
        (str(row["episode_id"]), row["ordinal"], row["start_char"], row["end_char"]) for row in rows
    } == expected


SESSION = "3f1c9a52-6a0e-4f51-9d5b-0f0a4c2e8b11"
TURNS = [
    "Caroline: I went to an LGBTQ support group for the first time yesterday.",
    "Melanie: Oh wow, how did that go?",
    "Caroline: It was really powerful, everyone there was so accepting.",
]
QUESTION = "How did Caroline feel about the support group?"


async def test_a_turn_is_found_by_what_came_before_it_in_its_session(client, sql):
    for turn in TURNS:  # one by one: the context comes from stored turns
        await store_episode(client, turn, butler="chat", session_id=SESSION)
    alone = await store_episode(client, TURNS[2], butler="other")

    results = await search(client, QUESTION, mode="semantic", types=["episode"], limit=5)

    by_butler = {(hit["butler"], hit["content"]): hit for hit in results}
    in_session, standalone = by_butler[("chat", TURNS[2])], by_butler[("other", TURNS[2])]
    assert in_session["passage"]["kind"] == "context"
    assert in_session["similarity"] > standalone["similarity"]
    assert standalone["id"] == alone["id"] and standalone["passage"] is None
    [first] = await sql(
        "SELECT count(*) AS n FROM passages p JOIN episodes e "
        "ON e.tenant_id = p.tenant_id AND e.id = p.episode_id WHERE e.content = :c",
        c=TURNS[0],
    )
    assert first["n"] == 0  # nothing came before the first turn


async def test_a_batch_gives_its_turns_the_context_of_earlier_items(client, sql):
    response = await client.post(
        "/v1/episodes/batch",
        json={
            "items": [{"content": turn, "butler": "chat", "session_id": SESSION} for turn in TURNS]
        },
    )
    assert response.status_code == 201, response.text

    rows = await sql(
        "SELECT e.content, p.kind FROM passages p JOIN episodes e "
        "ON e.tenant_id = p.tenant_id AND e.id = p.episode_id ORDER BY e.sequence"
    )

    assert [(row["content"], row["kind"]) for row in rows] == [
        (TURNS[1], "context"),
        (TURNS[2], "context"),
    ]
    [hit, *_] = await search(client, QUESTION, mode="semantic", types=["episode"])
    assert hit["passage"] is None or hit["passage"]["kind"] == "context"


async def test_episodes_in_no_session_get_no_context(client, sql, inferred_sessions):
    for hour, turn in enumerate(TURNS):  # hours apart: past the gap of an inferred session
        await store_episode(
            client, turn, butler="chat", occurred_at=f"2024-03-01T{10 + hour}:00:00Z"
        )

    [count] = await sql("SELECT count(*) AS n FROM passages")

    assert count["n"] == 0


async def test_turns_without_a_session_id_are_read_after_the_turns_before_them(
    client, sql, inferred_sessions
):
    """Their inferred session gives them context passages as an explicit one does."""
    for minute, turn in enumerate(TURNS[:2]):
        await store_episode(client, turn, butler="chat", occurred_at=f"2024-03-01T10:0{minute}:00Z")
    response = await client.post(
        "/v1/episodes/batch",
        json={
            "items": [
                {"content": TURNS[2], "butler": "chat", "occurred_at": "2024-03-01T10:02:00Z"}
            ]
        },
    )
    assert response.status_code == 201, response.text

    passages = await context_passages(sql)

    assert [content for content, _ in passages] == TURNS[1:]


async def test_deleting_a_turn_of_an_inferred_session_renews_the_next_turns_context(
    client, sql, app, inferred_sessions
):
    stored = [
        await store_episode(client, turn, butler="chat", occurred_at=f"2024-03-01T10:0{minute}:00Z")
        for minute, turn in enumerate(TURNS)
    ]

    response = await client.delete(f"/v1/episodes/{stored[1]['id']}")

    assert response.status_code == 204
    [(content, vector)] = await context_passages(sql)
    assert content == TURNS[2]
    expected = await app.state.embedder.aembed(context_text([TURNS[0]], TURNS[2]))
    assert float(np.dot(vector, expected)) > 0.9999


async def test_reembed_rebuilds_context_passages(client, sql, app):
    for turn in TURNS:
        await store_episode(client, turn, butler="chat", session_id=SESSION)
    await sql("DELETE FROM passages")
    await sql("UPDATE episodes SET embedding_version_id = NULL")

    await reembed_all(app.state.sessionmaker, app.state.embedder)

    rows = await sql(
        "SELECT e.content FROM passages p "
        "JOIN episodes e ON e.tenant_id = p.tenant_id AND e.id = p.episode_id "
        "WHERE p.kind = 'context' ORDER BY e.sequence"
    )
    assert [row["content"] for row in rows] == TURNS[1:]


async def context_passages(sql):
    """(content, context passage vector) of every episode that has one, in session order."""
    rows = await sql(
        "SELECT e.content, p.embedding::text AS vector FROM passages p "
        "JOIN episodes e ON e.tenant_id = p.tenant_id AND e.id = p.episode_id "
        "WHERE p.kind = 'context' ORDER BY e.sequence"
    )
    return [(row["content"], json.loads(row["vector"])) for row in rows]


async def test_deleting_a_turn_takes_it_out_of_the_next_turns_context_passages(client, sql, app):
    turns = [
        "Caroline: we adopted a grey kitten from the shelter last week.",
        "Melanie: my new phone number is 555 0142, write it down.",
        "Caroline: done, saved it!",
        "Melanie: see you at the lake on Friday then.",
    ]
    stored = [
        await store_episode(client, turn, butler="chat", session_id=SESSION) for turn in turns
    ]

    response = await client.delete(f"/v1/episodes/{stored[1]['id']}")

    assert response.status_code == 204
    read_without_it = {
        turns[2]: context_text([turns[0]], turns[2]),
        turns[3]: context_text([turns[0], turns[2]], turns[3]),
    }
    passages = await context_passages(sql)
    assert [content for content, _ in passages] == [turns[2], turns[3]]
    for content, vector in passages:
        expected = await app.state.embedder.aembed(read_without_it[content])
        assert float(np.dot(vector, expected)) > 0.9999, content


async def test_deleting_a_session_s_first_turn_leaves_the_next_one_without_context(client, sql):
    first = await store_episode(client, TURNS[0], butler="chat", session_id=SESSION)
    for turn in TURNS[1:]:
        await store_episode(client, turn, butler="chat", session_id=SESSION)

    response = await client.delete(f"/v1/episodes/{first['id']}")

    assert response.status_code == 204
    assert [content for content, _ in await context_passages(sql)] == [TURNS[2]]


async def test_reembed_all_applies_a_new_context_turns_setting(client, sql, app, monkeypatch):
    for turn in TURNS:
        await store_episode(client, turn, butler="chat", session_id=SESSION)
    monkeypatch.setattr(app.state.embedder, "context_turns", 1)
    assert (await reembed_all(app.state.sessionmaker, app.state.embedder))["episodes"] == 0

    counts = await reembed_all(app.state.sessionmaker, app.state.embedder, every=True)

    assert counts == {"episodes": len(TURNS), "facts": 0, "rules": 0}
    [(content, vector)] = [(c, v) for c, v in await context_passages(sql) if c == TURNS[2]]
    expected = await app.state.embedder.aembed(context_text([TURNS[1]], TURNS[2]))
    assert float(np.dot(vector, expected)) > 0.9999


async def test_a_memory_matching_as_a_whole_ranks_before_a_window_matching_a_little_better(client):
    long_one = await store_episode(client, long_text())
    short = await store_episode(client, "I keep my keys on a hook by the door.")

    first, second = await search(
        client, "where is the spare key hidden?", mode="semantic", types=["episode"], limit=2
    )

    assert [first["id"], second["id"]] == [short["id"], long_one["id"]]
    # Each hit shows its true similarity: the window's is the higher one.
    assert second["passage"]["kind"] == "window"
    assert second["similarity"] == second["passage"]["similarity"] > first["similarity"]


async def test_a_long_turn_does_not_rank_by_the_turns_before_it(client):
    question = await store_episode(
        client, "Where is the spare key hidden? I need it tonight.", session_id="evening"
    )
    long_reply = await store_episode(client, " ".join(FILLER[:6]), session_id="evening")
    short_reply = await store_episode(client, "Sure, give me a minute.", session_id="evening")
    hook = await store_episode(client, "I keep my keys on a hook by the door.")

    found = await search(
        client, "where is the spare key hidden?", mode="semantic", types=["episode"]
    )

    # The short reply ranks as read after the question (its context passage); the long
    # reply, over 400 characters, by its own words, although its context passage (shown
    # with its similarity) is nearer than the hook.
    assert [hit["id"] for hit in found] == [
        question["id"],
        short_reply["id"],
        hook["id"],
        long_reply["id"],
    ]
    assert found[1]["passage"]["kind"] == "context"
    assert found[3]["passage"]["kind"] == "context"
    assert found[3]["passage"]["similarity"] > found[2]["similarity"]
