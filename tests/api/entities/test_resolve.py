"""Entity resolution through HTTP: tiers, scores, hints, tombstones, wildcards, fuzzy."""

import uuid

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from app.schemas.entities import ResolveRequest
from app.services.entities import resolve_name
from tests.support.factories import create_entity, store_fact


async def resolve(client, name, **fields):
    response = await client.post("/v1/entities/resolve", json={"name": name, **fields})
    assert response.status_code == 200, response.text
    return response.json()


def matches(candidates):
    return [(c["canonical_name"], c["name_match"], c["score"]) for c in candidates]


async def test_exact_canonical_name_scores_100_case_insensitively(client):
    entity = await create_entity(client, "Caroline Smith", aliases=["Caro"])
    [candidate] = await resolve(client, "caroline SMITH")
    assert candidate == {
        "entity_id": entity["id"],
        "canonical_name": "Caroline Smith",
        "entity_type": "person",
        "score": 100.0,
        "name_match": "exact",
        "aliases": ["Caro"],
    }


async def test_exact_alias_scores_80_case_insensitively(client):
    await create_entity(client, "Robert Paulson", aliases=["Bob"])
    assert matches(await resolve(client, "BOB")) == [("Robert Paulson", "alias", 80.0)]


async def test_prefix_and_substring_of_name_or_alias_score_50(client):
    await create_entity(client, "Samantha Jones")
    await create_entity(client, "Jonas Samuelson")
    await create_entity(client, "Kim", aliases=["Big Sam"])
    await create_entity(client, "Nobody")
    result = await resolve(client, "sam")
    assert matches(result) == [
        ("Jonas Samuelson", "prefix", 50.0),
        ("Kim", "prefix", 50.0),
        ("Samantha Jones", "prefix", 50.0),
    ]


async def test_each_entity_appears_once_in_its_best_tier(client):
    await create_entity(client, "Alex", aliases=["Alex", "Alexander"])
    await create_entity(client, "Max", aliases=["alex"])
    assert matches(await resolve(client, "alex")) == [
        ("Alex", "exact", 100.0),
        ("Max", "alias", 80.0),
    ]


async def test_results_ordered_by_score_then_canonical_name(client):
    await create_entity(client, "Zed", aliases=["Ann"])
    await create_entity(client, "Ann")
    await create_entity(client, "Annabel")
    await create_entity(client, "Anna")
    await create_entity(client, "Ann", entity_type="organization")
    assert matches(await resolve(client, "ann")) == [
        ("Ann", "exact", 100.0),
        ("Ann", "exact", 100.0),
        ("Zed", "alias", 80.0),
        ("Anna", "prefix", 50.0),
        ("Annabel", "prefix", 50.0),
    ]


async def test_entity_type_filter_keeps_only_that_type(client):
    await create_entity(client, "Paris", "place")
    await create_entity(client, "Paris", "person")
    result = await resolve(client, "Paris", entity_type="place")
    assert [(c["canonical_name"], c["entity_type"]) for c in result] == [("Paris", "place")]


async def test_limit_caps_the_number_of_candidates(client):
    for i in range(5):
        await create_entity(client, f"Team {i}", "organization")
    result = await resolve(client, "team", limit=2)
    assert [c["canonical_name"] for c in result] == ["Team 0", "Team 1"]


async def test_merged_entities_are_never_candidates(client):
    target = await create_entity(client, "Robert")
    source = await create_entity(client, "Bobby", aliases=["Rob"])
    merged = await client.post(
        f"/v1/entities/{target['id']}/merge", json={"source_id": source["id"]}
    )
    assert merged.status_code == 200
    assert [c["entity_id"] for c in await resolve(client, "Bobby")] == [target["id"]]
    assert [c["name_match"] for c in await resolve(client, "Bobby")] == ["alias"]
    assert await resolve(client, "obb", enable_fuzzy=True) == [
        {**(await resolve(client, "obb"))[0]}
    ]


async def test_tombstone_set_by_sql_is_excluded(client, sql):
    entity = await create_entity(client, "Ghost")
    target = await create_entity(client, "Spirit")
    await sql(
        "UPDATE entities SET merged_into_id = :t WHERE id = :id",
        t=uuid.UUID(target["id"]),
        id=uuid.UUID(entity["id"]),
    )
    assert await resolve(client, "Ghost") == []
    assert await resolve(client, "Ghots", enable_fuzzy=True) == []


async def test_no_match_returns_empty_list_and_creates_nothing(client, sql):
    await create_entity(client, "Caroline")
    assert await resolve(client, "Zebulon", enable_fuzzy=True) == []
    [row] = await sql("SELECT count(*) AS n FROM entities")
    assert row["n"] == 1


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("500 Club", "50%"),
        ("abc", "a_c"),
        ("a\\b", "a\\\\b"),
        ("ab", "a%"),
    ],
)
async def test_like_wildcards_in_the_name_are_literal(client, stored, query):
    await create_entity(client, stored, "place")
    assert await resolve(client, query) == []


async def test_names_containing_wildcards_still_match_literally(client):
    await create_entity(client, "50% Off Store", "organization")
    await create_entity(client, "snake_case Inc", "organization")
    await create_entity(client, "back\\slash", "organization")
    assert matches(await resolve(client, "50%")) == [("50% Off Store", "prefix", 50.0)]
    assert matches(await resolve(client, "e_c")) == [("snake_case Inc", "prefix", 50.0)]
    assert matches(await resolve(client, "k\\s")) == [("back\\slash", "prefix", 50.0)]


async def test_fuzzy_tier_is_off_by_default(client):
    await create_entity(client, "Jonathan")
    assert await resolve(client, "Jonathon") == []


async def test_fuzzy_match_on_name_scores_20(client):
    await create_entity(client, "Jonathan")
    await create_entity(client, "Kim")
    # trigrams of jonathan / jonathon: 6 shared of 12, similarity 0.5
    result = await resolve(client, "Jonathon", enable_fuzzy=True)
    assert matches(result) == [("Jonathan", "fuzzy", 20.0)]


async def test_fuzzy_match_on_alias(client):
    await create_entity(client, "Acme Corporation", "organization", aliases=["Globex"])
    assert matches(await resolve(client, "Globax", enable_fuzzy=True)) == [
        ("Acme Corporation", "fuzzy", 20.0)
    ]


async def test_fuzzy_never_duplicates_an_earlier_tier(client):
    await create_entity(client, "Jonathan")
    await create_entity(client, "Jonathan Smith")
    result = await resolve(client, "jonathan", enable_fuzzy=True)
    assert matches(result) == [("Jonathan", "exact", 100.0), ("Jonathan Smith", "prefix", 50.0)]


async def test_fuzzy_threshold_is_0_3_similarity(client):
    await create_entity(client, "Jon")  # 3 of 10 trigrams shared with jonathon: exactly 0.3
    await create_entity(client, "Jo")  # 2 of 10 shared: 0.2
    assert matches(await resolve(client, "Jonathon", enable_fuzzy=True)) == [("Jon", "fuzzy", 20.0)]


async def test_fuzzy_needs_more_than_two_characters(client):
    await create_entity(client, "Ax")
    assert await resolve(client, "Az", enable_fuzzy=True) == []


async def test_fuzzy_degrades_to_empty_without_pg_trgm(client, db_engine):
    await create_entity(client, "Jonathan")
    await create_entity(client, "Jonathan Smith")
    request = ResolveRequest(name="Jonathon", enable_fuzzy=True)
    substring = ResolveRequest(name="than smi")
    async with db_engine.connect() as conn:
        transaction = await conn.begin()
        try:
            await conn.exec_driver_sql("DROP EXTENSION pg_trgm CASCADE")
            session = AsyncSession(bind=conn)
            assert await resolve_name(session, tenant_id="default", request=request) == []
            [found] = await resolve_name(session, tenant_id="default", request=substring)
            assert (found.canonical_name, found.name_match) == ("Jonathan Smith", "prefix")
        finally:
            await transaction.rollback()
    assert matches(await resolve(client, "Jonathon", enable_fuzzy=True)) == [
        ("Jonathan", "fuzzy", 20.0),
        ("Jonathan Smith", "fuzzy", 20.0),
    ]


async def test_topic_hint_adds_jaccard_boost_of_fact_words(client):
    smith = await create_entity(client, "Alex Smith")
    await create_entity(client, "Alex Jones")
    # fact words {works, at, acme}; hint words {acme}: Jaccard 1/3, boost 20/3
    await store_fact(client, "s", "works_at", "works at Acme", entity_id=smith["id"])
    result = await resolve(client, "alex", context_hints={"topic": "ACME"})
    assert matches(result) == [("Alex Smith", "prefix", 56.6667), ("Alex Jones", "prefix", 50.0)]


async def test_mentioned_with_words_join_the_hint(client):
    smith = await create_entity(client, "Alex Smith")
    await create_entity(client, "Alex Jones")
    # fact words {knows, friends, with, dana}; hint words {dana, acme}: Jaccard 1/5 -> +4
    await store_fact(client, "s", "knows", "friends with Dana", entity_id=smith["id"])
    result = await resolve(
        client, "alex", context_hints={"topic": "acme", "mentioned_with": ["Dana"]}
    )
    assert matches(result)[0] == ("Alex Smith", "prefix", 54.0)


async def test_full_overlap_boost_is_capped_at_20(client):
    smith = await create_entity(client, "Alex Smith")
    await store_fact(client, "s", "likes", "chess", entity_id=smith["id"])
    result = await resolve(client, "alex", context_hints={"topic": "likes chess"})
    assert matches(result) == [("Alex Smith", "prefix", 70.0)]


async def test_only_active_facts_feed_the_hint_boost(client):
    smith = await create_entity(client, "Alex Smith")
    fact = await store_fact(client, "s", "likes", "chess", entity_id=smith["id"])
    await client.post(f"/v1/facts/{fact['id']}/forget")
    result = await resolve(client, "alex", context_hints={"topic": "likes chess"})
    assert matches(result) == [("Alex Smith", "prefix", 50.0)]


async def test_domain_scores_are_added_to_matching_candidates(client):
    await create_entity(client, "Alex Smith")
    jones = await create_entity(client, "Alex Jones")
    result = await resolve(
        client, "alex", context_hints={"domain_scores": {jones["id"]: 7.25, str(uuid.uuid4()): 99}}
    )
    assert matches(result) == [("Alex Jones", "prefix", 57.25), ("Alex Smith", "prefix", 50.0)]


async def test_negative_domain_score_can_reorder_tiers(client):
    exact = await create_entity(client, "Alex")
    await create_entity(client, "Alexa")
    result = await resolve(client, "alex", context_hints={"domain_scores": {exact["id"]: -60}})
    assert matches(result) == [("Alexa", "prefix", 50.0), ("Alex", "exact", 40.0)]


async def test_resolve_rejects_blank_name_and_unknown_fields(client):
    assert (await client.post("/v1/entities/resolve", json={"name": "  "})).status_code == 422
    response = await client.post("/v1/entities/resolve", json={"name": "a", "auto_create": True})
    assert response.status_code == 422
