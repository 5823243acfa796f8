"""Long texts written without spaces (Chinese, Japanese) cost about what English of the same
length costs: the keyword triggers reckon a document's length once, a document and a query
keep a bounded number of distinct words, mentions are matched in linear time, and a request
statement that runs too long is cancelled with a 503 and leaves nothing behind."""

import asyncio
import random
import time
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.languages import MAX_DOCUMENT_LEXEMES, MAX_QUERY_WORDS, first_words, keyword_query
from app.core.scope import SYSTEM, scope_session, scoped_transaction
from app.services.mentions import link_mentions


def cjk(chars: int, seed: int = 1) -> str:
    """Random CJK ideographs: about one new character pair (lexeme) per character."""
    rng = random.Random(seed)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(chars))


async def test_the_trigger_reckons_a_documents_length_once_not_per_lexeme(db_engine):
    calls = text(
        "SELECT pg_stat_get_xact_function_calls('engram_tsvector_length(tsvector)'::regprocedure)"
    )
    async with db_engine.connect() as conn, conn.begin() as transaction:
        await conn.execute(text("SET LOCAL track_functions = 'all'"))
        await conn.execute(text("SELECT set_config('engram.system', 'on', true)"))
        await conn.execute(
            text(
                "INSERT INTO episodes (tenant_id, butler, content, search_vector, search_config) "
                "VALUES ('default', 'chat', 'x', to_tsvector('simple', :words), 'simple')"
            ),
            {"words": " ".join(f"w{n}" for n in range(2_000))},
        )
        counted = (await conn.execute(calls)).scalar_one()
        await transaction.rollback()
    # The tenant's total, the scope's total, the postings' documents: not one per lexeme.
    assert counted is not None and counted <= 5, counted


async def test_a_10k_character_cjk_episode_is_stored_in_seconds_not_a_minute(client, sql):
    began = time.perf_counter()
    response = await client.post("/v1/episodes", json={"content": cjk(10_000), "butler": "zh"})
    assert response.status_code == 201, response.text
    # It took a minute when the length was reckoned once per lexeme.
    assert time.perf_counter() - began < 15
    [row] = await sql(
        "SELECT count(*) AS n FROM keyword_postings WHERE memory_id = :id", id=response.json()["id"]
    )
    assert row["n"] > 9_000


async def test_a_document_keeps_its_first_distinct_words_only(client, sql):
    content = cjk(MAX_DOCUMENT_LEXEMES + 3_000, seed=2)
    response = await client.post("/v1/episodes", json={"content": content, "butler": "zh"})
    assert response.status_code == 201, response.text
    episode_id = response.json()["id"]
    [row] = await sql(
        "SELECT count(*) AS n FROM keyword_postings WHERE memory_id = :id", id=episode_id
    )
    assert row["n"] == MAX_DOCUMENT_LEXEMES
    [counts] = await sql(
        "SELECT length(search_vector) AS n FROM episodes WHERE id = :id", id=episode_id
    )
    assert counts["n"] == MAX_DOCUMENT_LEXEMES
    for query, found in ((content[:2], True), (content[-2:], False)):
        answer = await client.post(
            "/v1/search", json={"query": query, "mode": "keyword", "scope": "zh"}
        )
        assert answer.status_code == 200, answer.text
        assert (episode_id in [hit["id"] for hit in answer.json()["results"]]) is found


def test_a_query_is_read_up_to_its_first_distinct_words():
    words = [f"word{n}" for n in range(MAX_QUERY_WORDS + 50)]
    read = keyword_query(" ".join(words + words))
    assert read.text == " ".join(words[:MAX_QUERY_WORDS])
    # Repeats do not count: the limit is on distinct words.
    assert first_words("a a A b c", 2) == "a a A b"
    assert first_words("short query", 5) == "short query"
    # A long unspaced query keeps as many character pairs.
    assert len(keyword_query(cjk(4_000)).text.split()) == MAX_QUERY_WORDS


async def test_a_long_cjk_query_answers_about_as_fast_as_a_short_one(client):
    stored = cjk(3_000, seed=3)
    assert (
        await client.post("/v1/episodes", json={"content": stored, "butler": "zh"})
    ).status_code == 201
    began = time.perf_counter()
    answer = await client.post(
        "/v1/search", json={"query": stored[:4_000] + cjk(1_000), "mode": "keyword", "scope": "zh"}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"]
    assert time.perf_counter() - began < 5


async def test_a_name_at_the_end_of_a_long_text_is_linked(client, sql):
    entity = await client.post(
        "/v1/entities", json={"canonical_name": "Zeta Omega Corp", "entity_type": "organization"}
    )
    assert entity.status_code == 201, entity.text
    content = " ".join(["Zeta"] + ["a"] * 24_000 + ["Zeta", "Omega", "Corp"])
    response = await client.post("/v1/episodes", json={"content": content, "butler": "chat"})
    assert response.status_code == 201, response.text
    links = await sql(
        "SELECT target_id FROM memory_links WHERE source_id = :id AND relation = 'mentions'",
        id=response.json()["id"],
    )
    assert [str(row["target_id"]) for row in links] == [entity.json()["id"]]


async def _seconds_to_link_mentions(db_engine, words: int) -> float:
    """One run of the mention statement over a text of `words` words that names the
    tenant's one entity at its start and its end (rolled back)."""
    content = " ".join(["Zeta"] + ["a"] * words + ["Zeta", "Omega", "Corp"])
    async with AsyncSession(db_engine) as session:
        scope_session(session, SYSTEM)
        began = time.perf_counter()
        linked = await link_mentions(
            session,
            tenant_id="default",
            memory_type="episode",
            ids=[uuid.uuid4()],
            texts=[content],
        )
        seconds = time.perf_counter() - began
        assert linked == 1
        await session.rollback()
    return seconds


async def test_mentions_are_found_in_time_linear_in_the_texts_length(client, db_engine):
    entity = await client.post(
        "/v1/entities", json={"canonical_name": "Zeta Omega Corp", "entity_type": "organization"}
    )
    assert entity.status_code == 201, entity.text
    # Each n-gram was once sliced from the start of the word array: 16x the words took 256x
    # the time. Linear work takes at most 16x; the fastest of runs taken in turn, and a bound
    # four times that, leave room for a busy machine.
    short, long = float("inf"), float("inf")
    for _ in range(5):
        short = min(short, await _seconds_to_link_mentions(db_engine, 1_500))
        long = min(long, await _seconds_to_link_mentions(db_engine, 24_000))
    assert long < 64 * short, (short, long)


async def test_a_statement_past_the_timeout_answers_503_and_writes_nothing(
    app, client, sql, monkeypatch
):
    monkeypatch.setattr(app.state.settings, "db_statement_timeout_seconds", 0.2)
    # One such text alone passes 0.2 s on this 2-core machine; four leave room for a faster one.
    items = [{"content": cjk(20_000, seed=n), "butler": "zh"} for n in range(4)]
    response = await client.post("/v1/episodes/batch", json={"items": items})
    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert int(response.headers["Retry-After"]) > 0
    assert "statement timeout" in response.json()["detail"]
    assert await sql("SELECT id FROM episodes") == []
    assert await sql("SELECT memory_id FROM keyword_postings") == []
    # The connection went back to the pool, not left running or idle in a transaction.
    pool = app.state.db_engine.pool
    async with asyncio.timeout(10):
        while pool.checkedout():
            await asyncio.sleep(0.05)
    assert (
        await sql(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' "
            "AND state NOT IN ('idle')"
        )
        == []
    )
    monkeypatch.undo()
    assert (
        await client.post("/v1/episodes", json={"content": "after", "butler": "zh"})
    ).status_code == 201


async def test_background_transactions_have_no_statement_timeout(app):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        assert (await session.execute(text("SHOW statement_timeout"))).scalar_one() == "0"
