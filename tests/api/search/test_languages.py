"""Keyword search in any language: texts are stemmed for their detected language, scripts
written without spaces are read as character pairs, and rows stored English-stemmed are read
again by `engram reindex-text`."""

import asyncio

from app.worker.reindex_text import reindex_texts
from tests.support.factories import store_episode, store_fact, store_rule
from tests.support.waiting import slowest_answer

GERMAN = "Gestern besuchten unsere Kinder mehrere Gärten"
# Every word inflected otherwise than in GERMAN: only German stems join them.
GERMAN_QUERY = "Welches Kind besuchte einen Garten?"
CHINESE = "我昨天在北京大学的图书馆看书"
THAI = "ฉันชอบกินข้าวผัดที่ร้านใกล้บ้าน"


async def keyword_search(client, query, **fields):
    response = await client.post("/v1/search", json={"query": query, "mode": "keyword", **fields})
    assert response.status_code == 200, response.text
    return [hit["content"] for hit in response.json()["results"]]


async def test_an_inflected_german_query_finds_a_german_memory(client):
    await store_episode(client, GERMAN)
    await store_episode(client, "Der Zug nach Hamburg hatte heute Verspätung")

    assert await keyword_search(client, GERMAN_QUERY) == [GERMAN]


async def test_a_two_character_chinese_word_finds_the_memory_holding_it(client):
    await store_episode(client, CHINESE)
    await store_episode(client, "上海今天的天气很好")

    assert await keyword_search(client, "北京") == [CHINESE]
    assert await keyword_search(client, "图书馆") == [CHINESE]


async def test_a_thai_word_finds_the_memory_holding_it(client):
    await store_episode(client, THAI)
    await store_episode(client, "วันนี้อากาศดีมาก")

    assert await keyword_search(client, "ข้าวผัด") == [THAI]


async def test_each_memory_keeps_the_configuration_of_its_detected_language(client, sql):
    german = await store_episode(client, GERMAN)
    chinese = await store_episode(client, CHINESE)
    english = await store_episode(client, "The children visited several gardens yesterday")
    russian = await store_fact(
        client, subject="Анна", predicate="живёт_в", content="Анна живёт в Москве с детьми"
    )

    rows = await sql(
        "SELECT id::text AS id, search_config::text AS config FROM episodes "
        "UNION ALL SELECT id::text, search_config::text FROM facts"
    )
    assert {row["id"]: row["config"] for row in rows} == {
        german["id"]: "german",
        chinese["id"]: "simple",
        english["id"]: "english",
        russian["id"]: "russian",
    }


async def test_reindex_text_reads_english_stemmed_rows_in_their_own_language(app, client, sql):
    german = await store_episode(client, GERMAN)
    rule = await store_rule(client, content="Antworte immer mit kurzen Sätzen auf Deutsch")
    # As stored before languages were told apart.
    for table in ("episodes", "rules"):
        await sql(
            f"UPDATE {table} SET search_vector = to_tsvector('english', content), "
            "search_config = 'english'"
        )
    assert await keyword_search(client, GERMAN_QUERY) == []

    counts = await reindex_texts(app.state.sessionmaker, context_turns=2, keyword_context=True)

    assert counts["episodes"] == 1 and counts["rules"] == 1
    assert await keyword_search(client, GERMAN_QUERY) == [GERMAN]
    assert await keyword_search(client, "kurzer Satz", types=["rule"]) == [rule["content"]]
    rows = await sql(
        "SELECT id::text AS id, search_config::text AS config FROM episodes "
        "UNION ALL SELECT id::text, search_config::text FROM rules"
    )
    assert {row["id"]: row["config"] for row in rows} == {
        german["id"]: "german",
        rule["id"]: "german",
    }


async def test_a_write_and_a_search_may_name_their_language(client, sql):
    # Too short for the detector, which reads it as English.
    told = await store_episode(client, "Unsere Gärten", language="de")
    detected = await store_episode(client, "Unsere Gärten", butler="other")

    rows = await sql("SELECT id::text AS id, search_config::text AS config FROM episodes")
    assert {row["id"]: row["config"] for row in rows} == {
        told["id"]: "german",
        detected["id"]: "english",
    }
    found = await client.post(
        "/v1/search", json={"query": "Garten", "mode": "keyword", "language": "de"}
    )
    assert [hit["id"] for hit in found.json()["results"]] == [told["id"]]
    assert await keyword_search(client, "Garten") == []


async def test_a_fact_and_a_rule_may_name_their_language(client, sql):
    fact = await store_fact(
        client, subject="Anna", predicate="mag", content="Unsere Gärten", language="de"
    )
    rule = await store_rule(client, content="Unsere Gärten", language="de")

    rows = await sql(
        "SELECT id::text AS id, search_config::text AS config FROM facts "
        "UNION ALL SELECT id::text, search_config::text FROM rules"
    )
    assert {row["id"]: row["config"] for row in rows} == {
        fact["id"]: "german",
        rule["id"]: "german",
    }


async def test_a_malformed_language_is_refused_naming_the_field(client):
    response = await client.post(
        "/v1/episodes", json={"content": "hello", "butler": "chat", "language": "de; drop"}
    )
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "language" in response.text


async def test_the_stop_words_of_a_query_s_language_find_nothing(client):
    # Read word for word, this text keeps words German drops as stop words.
    await store_episode(client, "die der und das", language="vi")
    await store_episode(client, GERMAN)

    assert await keyword_search(client, "Welches Kind besuchte die Gärten?") == [GERMAN]


async def test_a_hybrid_search_in_a_language_the_model_does_not_know_is_served_by_keyword(
    app, client, monkeypatch
):
    monkeypatch.setattr(app.state.embedder, "languages", frozenset({"en"}))
    await store_episode(client, GERMAN)
    answer = (await client.post("/v1/search", json={"query": GERMAN_QUERY})).json()
    assert (answer["mode"], answer["semantic_skipped"]) == ("keyword", "language")
    assert [hit["content"] for hit in answer["results"]][:1] == [GERMAN]
    english = (
        await client.post("/v1/search", json={"query": "Which child visited a garden yesterday?"})
    ).json()
    assert (english["mode"], english["semantic_skipped"]) == ("hybrid", None)
    monkeypatch.setattr(app.state.embedder, "languages", None)  # a model of any language
    anyone = (await client.post("/v1/search", json={"query": GERMAN_QUERY})).json()
    assert (anyone["mode"], anyone["semantic_skipped"]) == ("hybrid", None)


async def test_other_requests_are_answered_while_texts_of_many_marks_are_stored(client):
    # A Thai letter carrying every tone mark it is sent with: one character to segment.
    marked = "ร" + "\u0e49" * 49_999
    storing = asyncio.ensure_future(
        client.post(
            "/v1/episodes/batch", json={"items": [{"content": marked, "butler": "chat"}] * 20}
        )
    )
    slowest = await slowest_answer(client, "/healthz", storing)
    assert slowest < 0.8, f"/healthz waited {slowest:.2f} s while the batch was stored"
    response = await storing
    assert response.status_code == 201, response.text
    assert [item["content"] for item in response.json()["items"]] == [marked] * 20
