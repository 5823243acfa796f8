"""The BM25 keyword leg: ordering on small corpora with known answers, and the postings and
term statistics (per tenant and per scope) that the mem_010 and mem_021 triggers keep (after
deletes, rewrites, per tenant)."""

import uuid

from sqlalchemy import literal
from sqlalchemy.dialects import postgresql

from app.repositories.search import keyword
from tests.support.factories import harmful, store_fact
from tests.support.keyword_index import recomputed_index, stored_index

FILLER = (
    "the committee reviewed several quarterly reports about regional logistics "
    "warehouses shipping schedules invoices budgets vendors contracts audits and "
    "compliance paperwork before lunch"
)


async def episode(client, content, butler="chat"):
    response = await client.post("/v1/episodes", json={"content": content, "butler": butler})
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def keyword_ids(client, query, **fields):
    response = await client.post("/v1/search", json={"query": query, "mode": "keyword", **fields})
    assert response.status_code == 200, response.text
    return [hit["id"] for hit in response.json()["results"]]


async def test_term_frequency_saturates(client):
    repeated = await episode(client, " ".join(["lighthouse"] * 20))
    both = await episode(client, "the lighthouse keeper fed a pelican")
    await episode(client, "a pelican flew over the harbour at dawn")
    await episode(client, "the lighthouse was painted red and white")
    found = await keyword_ids(client, "lighthouse pelican")
    assert found[0] == both
    assert repeated in found[1:]


async def test_short_document_beats_long_one_with_the_same_match(client):
    long = await episode(client, f"the glacier melted; {FILLER}")
    short = await episode(client, "the glacier melted")
    await episode(client, FILLER)
    assert (await keyword_ids(client, "glacier"))[:2] == [short, long]


async def test_rare_word_outweighs_common_word(client):
    for number in range(8):
        await episode(client, f"morning coffee number {number} with toast")
    common_twice = await episode(client, "coffee, more coffee, and coffee again")
    rare = await episode(client, "we shared a tiramisu")
    assert (await keyword_ids(client, "coffee tiramisu"))[0] == rare
    assert common_twice in await keyword_ids(client, "coffee tiramisu")


async def test_keyword_leg_finds_a_match_among_many_common_postings(client):
    # 130 memories share the common word, more than the leg reads per lexeme; the one that
    # also holds the rare word must still come first.
    response = await client.post(
        "/v1/episodes/batch",
        json={
            "items": [
                {"content": f"weather report {n}: the weather stayed mild", "butler": "chat"}
                for n in range(130)
            ]
        },
    )
    assert response.status_code == 201, response.text
    target = await episode(client, f"weather balloon launched. {FILLER}")
    assert (await keyword_ids(client, "weather balloon"))[0] == target


async def test_index_follows_inserts_and_deletes(client, sql):
    kept = await episode(client, "the orchard blossoms in april")
    gone = await episode(client, "the orchard was sold in may, orchard and all", butler="sold")
    await client.post(
        "/v1/facts", json={"subject": "Ann", "predicate": "owns", "content": "Ann owns the orchard"}
    )
    await sql("DELETE FROM episodes WHERE id = :id", id=uuid.UUID(gone))
    assert await stored_index(sql) == await recomputed_index(sql)
    assert await keyword_ids(client, "orchard", types=["episode"]) == [kept]
    [orchard] = await sql("SELECT doc_freq FROM keyword_terms WHERE term = 'orchard'")
    assert orchard["doc_freq"] == 2


async def test_index_follows_a_rule_rewritten_by_inversion(client, sql):
    response = await client.post("/v1/rules", json={"content": "Always reply in French"})
    rule = response.json()
    for reason in ("user speaks German", "confused the user", "too slow"):
        await harmful(client, rule["id"], reason=reason)
    response = await client.post(f"/v1/rules/{rule['id']}/invert")
    assert response.status_code == 200, response.text
    assert await stored_index(sql) == await recomputed_index(sql)
    assert await keyword_ids(client, "German", min_confidence=0) == [rule["id"]]


async def test_statistics_are_per_tenant(tenant_client, sql):
    alpha = await tenant_client("alpha")
    beta = await tenant_client("beta")
    for number in range(6):
        await episode(alpha, f"pear harvest report {number}")
    apple = await episode(alpha, "an apple and a pear")
    pear = await episode(alpha, "pear pear pear and a ladder")
    before = await keyword_ids(alpha, "apple pear")
    [apple_in_alpha] = await sql(
        "SELECT doc_freq FROM keyword_terms WHERE tenant_id = 'alpha' AND term = 'appl'"
    )
    for number in range(10):
        await episode(beta, f"apple apple apple orchard {number}")
    assert await keyword_ids(alpha, "apple pear") == before
    assert before[:2] == [apple, pear]
    assert await sql(
        "SELECT doc_freq FROM keyword_terms WHERE tenant_id = 'alpha' AND term = 'appl'"
    ) == [apple_in_alpha]
    assert await keyword_ids(beta, "ladder") == []


async def test_scoped_search_weighs_words_by_its_own_scope(client):
    # In "orchard", pears are common and apples rare; another butler of the same tenant then
    # fills up with apples. A search within "orchard" must rank as before; a search of every
    # scope weighs the words by the whole tenant.
    apple = await episode(client, "an apple on the table", butler="orchard")
    pear = await episode(client, "a pear on the table", butler="orchard")
    for number in range(3):
        await episode(client, f"pear crate {number} loaded onto the cart", butler="orchard")
    assert (await keyword_ids(client, "apple pear", scope="orchard"))[:2] == [apple, pear]
    for number in range(20):
        await episode(client, f"apple strudel recipe {number}", butler="bakery")
    assert (await keyword_ids(client, "apple pear", scope="orchard"))[:2] == [apple, pear]
    everywhere = await keyword_ids(client, "apple pear", types=["episode"])
    assert everywhere.index(pear) < everywhere.index(apple)


async def test_scoped_fact_search_counts_its_scope_and_the_global_facts(client):
    # Within "garden" plus the global facts, pears are common and apples rare, however many
    # apple facts another scope holds.
    async def fact(content, scope, number):
        return (await store_fact(client, "Ann", f"note {number}", content, scope=scope))["id"]

    apple = await fact("an apple on the table", "garden", 1)
    pear = await fact("a pear on the table", "garden", 2)
    for number in range(3):
        await fact(f"pear crate {number} loaded onto the cart", "global", 10 + number)
    for number in range(20):
        await fact(f"apple strudel recipe {number}", "bakery", 20 + number)
    found = await keyword_ids(client, "apple pear", scope="garden", types=["fact"])
    assert found[:2] == [apple, pear]
    everywhere = await keyword_ids(client, "apple pear", types=["fact"])
    assert everywhere.index(pear) < everywhere.index(apple)


def _scans(plan, relation):
    """Every node of an EXPLAIN (FORMAT JSON) plan that reads `relation`."""
    found = [plan] if plan.get("Relation Name") == relation else []
    for child in plan.get("Plans", []):
        found += _scans(child, relation)
    return found


async def test_rescoring_probes_each_pooled_memory_with_stale_statistics(client, sql):
    """Facts stored after keyword_postings was last analysed (statistics that know of no fact
    postings) are rescored by primary-key probes, not by reading every fact posting."""
    for number in range(20):
        await episode(client, f"apple orchard harvest note {number}")
    await sql("ANALYZE keyword_postings")
    for number in range(30):
        await store_fact(client, "Ann", f"p{number}", f"grows apple trees in orchard {number}")
    statement = keyword.bm25_leg(
        "fact",
        tenant_id=literal("default"),
        scope=None,
        scope_is_global=False,
        visibility=[],
        query=literal("apple orchard"),
        limit=literal(10),
    )
    compiled = statement.compile(
        dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
    )
    [row] = await sql(f"EXPLAIN (FORMAT JSON) {compiled}")
    scans = _scans(row["QUERY PLAN"][0]["Plan"], "keyword_postings")
    assert scans
    for scan in scans:
        condition = scan.get("Index Cond", "")
        assert "term" in condition or "memory_id" in condition, scan


async def test_by_default_a_turn_is_found_by_its_own_words_only(client):
    """keyword_context is off by default: a session's turns are not found by their
    neighbours' words."""
    first = await client.post(
        "/v1/episodes",
        json={
            "content": "Caroline: I went to a support group yesterday",
            "butler": "chat",
            "session_id": "s1",
        },
    )
    assert first.status_code == 201, first.text
    reply = await client.post(
        "/v1/episodes",
        json={"content": "Melanie: how did it go?", "butler": "chat", "session_id": "s1"},
    )
    assert reply.status_code == 201, reply.text

    assert await keyword_ids(client, "support group") == [first.json()["id"]]


async def test_a_batch_counts_its_words_as_single_writes_do(client, sql):
    await episode(client, "the orchard blossoms in april")
    items = [
        {"content": content, "butler": butler, "session_id": "s1"}
        for content, butler in [
            ("the orchard was sold in may", "chat"),
            ("orchard orchard ladder", "chat"),
            ("a ladder in the barn", "farm"),
            ("and of the", "farm"),
        ]
    ]
    response = await client.post("/v1/episodes/batch", json={"items": items})
    assert response.status_code == 201, response.text
    assert await stored_index(sql) == await recomputed_index(sql)
    [orchard] = await sql("SELECT doc_freq FROM keyword_terms WHERE term = 'orchard'")
    assert orchard["doc_freq"] == 3
    assert (await keyword_ids(client, "ladder barn"))[0] == response.json()["items"][2]["id"]
