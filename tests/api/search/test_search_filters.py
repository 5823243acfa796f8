"""POST /v1/search filters: scope per type, lifecycle states, min_confidence, tenant, and a
selective filter that must still fill the limit."""

import uuid

import pytest

from tests.support.http import post


async def search_ids(client, query, **fields):
    response = await client.post("/v1/search", json={"query": query, **fields})
    assert response.status_code == 200, response.text
    return {(r["memory_type"], r["id"]) for r in response.json()["results"]}


async def scoped_memories(client):
    """A fact, a rule and an episode in each of 'global'/'chat'/'email'."""
    made = {}
    for scope in ("global", "chat", "email"):
        made[("fact", scope)] = (
            await post(
                client,
                "/v1/facts",
                subject=f"user-{scope}",
                predicate="likes",
                content="likes green tea",
                scope=scope,
            )
        )["id"]
        made[("rule", scope)] = (
            await post(client, "/v1/rules", content="offer green tea first", scope=scope)
        )["id"]
        made[("episode", scope)] = (
            await post(client, "/v1/episodes", butler=scope, content="we drank green tea")
        )["id"]
    return made


async def test_scope_returns_global_and_scoped_facts_and_rules_and_that_butlers_episodes(client):
    made = await scoped_memories(client)
    found = await search_ids(client, "green tea", scope="chat", limit=20)
    assert found == {
        ("fact", made[("fact", "global")]),
        ("fact", made[("fact", "chat")]),
        ("rule", made[("rule", "global")]),
        ("rule", made[("rule", "chat")]),
        ("episode", made[("episode", "chat")]),
    }


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
async def test_each_search_uses_its_own_values_not_the_previous_searchs(client, mode):
    """Statements are built once per shape and reused: scope, limit and query must still be
    this request's."""
    made = await scoped_memories(client)
    await post(client, "/v1/episodes", butler="email", content="the printer is jammed again")
    chat = await search_ids(client, "green tea", scope="chat", limit=20, mode=mode)
    email = await search_ids(client, "green tea", scope="email", limit=20, mode=mode)
    assert ("episode", made[("episode", "chat")]) in chat
    assert ("episode", made[("episode", "chat")]) not in email
    assert ("episode", made[("episode", "email")]) in email
    assert len(await search_ids(client, "green tea", scope="email", limit=1, mode=mode)) == 1
    printer = await search_ids(client, "printer jammed", scope="email", limit=1, mode=mode)
    assert {memory_type for memory_type, _ in printer} == {"episode"}
    assert ("episode", made[("episode", "email")]) not in printer


async def test_no_scope_searches_every_scope(client):
    made = await scoped_memories(client)
    found = await search_ids(client, "green tea", limit=20)
    assert found == {(memory_type, memory_id) for (memory_type, _), memory_id in made.items()}


@pytest.mark.parametrize("memory_type", ["episode", "fact", "rule"])
async def test_types_restricts_the_search(client, memory_type):
    await scoped_memories(client)
    found = await search_ids(client, "green tea", types=[memory_type], limit=20)
    assert {t for t, _ in found} == {memory_type}
    assert len(found) == 3


async def test_superseded_and_retracted_facts_are_not_found(client):
    old = await post(client, "/v1/facts", subject="Mel", predicate="city", content="lives in Rome")
    new = await post(client, "/v1/facts", subject="Mel", predicate="city", content="lives in Oslo")
    gone = await post(
        client, "/v1/facts", subject="Mel", predicate="pet", content="has a cat in Oslo"
    )
    response = await client.post(f"/v1/facts/{gone['id']}/forget")
    assert response.status_code == 200
    found = await search_ids(client, "Mel lives in Rome Oslo cat", mode="keyword")
    assert found == {("fact", new["id"])}
    assert ("fact", old["id"]) not in await search_ids(client, "Rome", mode="semantic")


async def test_forgotten_rule_is_not_found(client):
    kept = await post(client, "/v1/rules", content="Reply in French")
    forgotten = await post(client, "/v1/rules", content="Reply in French politely")
    assert (await client.post(f"/v1/rules/{forgotten['id']}/forget")).status_code == 200
    for mode in ("keyword", "semantic", "hybrid"):
        assert await search_ids(client, "reply French", mode=mode) == {("rule", kept["id"])}


async def test_expired_episode_is_not_found(client, sql):
    kept = await post(client, "/v1/episodes", butler="chat", content="Melanie ran a charity race")
    expired = await post(client, "/v1/episodes", butler="chat", content="Melanie ran a marathon")
    await sql(
        "UPDATE episodes SET expires_at = now() - interval '1 minute' WHERE id = :id",
        id=uuid.UUID(expired["id"]),
    )
    for mode in ("keyword", "semantic", "hybrid"):
        assert await search_ids(client, "Melanie ran", mode=mode) == {("episode", kept["id"])}


async def test_min_confidence_applies_to_decayed_confidence(client, sql):
    fresh = await post(
        client,
        "/v1/facts",
        subject="Mel",
        predicate="job",
        content="Mel is a nurse",
        permanence="volatile",
    )
    stale = await post(
        client,
        "/v1/facts",
        subject="Mel",
        predicate="hobby",
        content="Mel is a painter",
        permanence="volatile",
    )
    # 0.03/day for 60 days: exp(-1.8) = 0.165 < 0.2.
    await sql(
        "UPDATE facts SET last_confirmed_at = now() - interval '60 days' WHERE id = :id",
        id=uuid.UUID(stale["id"]),
    )
    assert await search_ids(client, "Mel nurse painter") == {("fact", fresh["id"])}
    assert await search_ids(client, "Mel nurse painter", min_confidence=0.16) == {
        ("fact", fresh["id"]),
        ("fact", stale["id"]),
    }
    assert await search_ids(client, "Mel nurse painter", min_confidence=0.0) == {
        ("fact", fresh["id"]),
        ("fact", stale["id"]),
    }


async def test_new_rule_passes_default_min_confidence_but_not_a_higher_one(client):
    rule = await post(client, "/v1/rules", content="Always confirm the meeting time")
    assert await search_ids(client, "confirm meeting") == {("rule", rule["id"])}
    assert await search_ids(client, "confirm meeting", min_confidence=0.6) == set()


async def test_other_tenants_memories_are_never_found(client, sql):
    mine = await post(client, "/v1/episodes", butler="chat", content="Caroline paints birds")
    await sql(
        "INSERT INTO episodes (tenant_id, butler, content, embedding, search_vector) "
        "SELECT 'other', butler, content, embedding, search_vector FROM episodes"
    )
    for mode in ("keyword", "semantic", "hybrid"):
        assert await search_ids(client, "Caroline paints", mode=mode) == {("episode", mine["id"])}


async def test_selective_filter_still_fills_the_limit(client, sql):
    """3000 facts of which 1 in 150 is confident enough: the HNSW scan must keep walking."""
    await sql(
        "INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key, content, "
        "embedding, search_vector, last_confirmed_at) "
        "SELECT 'default', 's' || g.g, 'p', 's' || g.g, 'p', 'filler ' || g.g, "
        "(SELECT array_agg(random() - 0.5 + 0 * d.d + 0 * g.g) "
        " FROM generate_series(1, 384) AS d(d))::vector, to_tsvector('english', 'filler'), "
        "CASE WHEN g.g % 150 = 0 THEN now() ELSE now() - interval '1000 days' END "
        "FROM generate_series(1, 3000) AS g(g)"
    )
    await sql("ANALYZE facts")
    response = await client.post(
        "/v1/search",
        json={
            "query": "what does the user like",
            "types": ["fact"],
            "mode": "semantic",
            "limit": 15,
        },
    )
    results = response.json()["results"]
    assert len(results) == 15
    assert all(r["effective_confidence"] >= 0.2 for r in results)
