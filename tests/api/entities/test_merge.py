"""Entity merge through HTTP: fact conflicts, aliases, metadata, tombstone, event, errors."""

import asyncio
import uuid
from datetime import datetime

from tests.support.factories import create_entity, store_fact


async def anchor_fact(client, sql, entity, predicate, content, *, confidence=1.0, scope="global"):
    fact_id = (
        await store_fact(
            client,
            entity["canonical_name"],
            predicate,
            content,
            entity_id=entity["id"],
            scope=scope,
        )
    )["id"]
    await sql(
        "UPDATE facts SET confidence = :c WHERE id = :id", c=confidence, id=uuid.UUID(fact_id)
    )
    return fact_id


async def merge(client, target, source):
    return await client.post(f"/v1/entities/{target['id']}/merge", json={"source_id": source["id"]})


async def fact_row(sql, fact_id):
    [row] = await sql(
        "SELECT entity_id::text AS entity_id, validity, "
        "supersedes_id::text AS supersedes_id FROM facts WHERE id = :id",
        id=uuid.UUID(fact_id),
    )
    return dict(row)


async def supersedes_links(sql):
    rows = await sql(
        "SELECT source_id::text AS s, target_id::text AS t FROM memory_links "
        "WHERE relation = 'supersedes'"
    )
    return {(row["s"], row["t"]) for row in rows}


async def test_facts_without_conflict_are_repointed(client, sql):
    target, source = await create_entity(client, "Robert"), await create_entity(client, "Bob")
    kept = await anchor_fact(client, sql, target, "lives_in", "lives in Boston")
    moved = await anchor_fact(client, sql, source, "works_at", "works at Acme")
    other_scope = await anchor_fact(
        client, sql, source, "lives_in", "lives in Paris", scope="travel"
    )
    response = await merge(client, target, source)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["facts_repointed"], body["facts_superseded"]) == (2, 0)
    for fact_id in (kept, moved, other_scope):
        assert await fact_row(sql, fact_id) == {
            "entity_id": target["id"],
            "validity": "active",
            "supersedes_id": None,
        }


async def test_source_fact_with_higher_confidence_wins(client, sql):
    target, source = await create_entity(client, "Robert"), await create_entity(client, "Bob")
    loser = await anchor_fact(client, sql, target, "lives_in", "Boston", confidence=0.6)
    winner = await anchor_fact(client, sql, source, "lives_in", "Denver", confidence=0.9)
    body = (await merge(client, target, source)).json()
    assert (body["facts_repointed"], body["facts_superseded"]) == (1, 1)
    assert await fact_row(sql, winner) == {
        "entity_id": target["id"],
        "validity": "active",
        "supersedes_id": loser,
    }
    assert await fact_row(sql, loser) == {
        "entity_id": target["id"],
        "validity": "superseded",
        "supersedes_id": None,
    }
    assert (winner, loser) in await supersedes_links(sql)


async def test_target_fact_with_higher_confidence_wins(client, sql):
    target, source = await create_entity(client, "Robert"), await create_entity(client, "Bob")
    winner = await anchor_fact(client, sql, target, "lives_in", "Boston", confidence=0.9)
    loser = await anchor_fact(client, sql, source, "lives_in", "Denver", confidence=0.6)
    body = (await merge(client, target, source)).json()
    assert (body["facts_repointed"], body["facts_superseded"]) == (1, 1)
    assert await fact_row(sql, winner) == {
        "entity_id": target["id"],
        "validity": "active",
        "supersedes_id": loser,
    }
    assert await fact_row(sql, loser) == {
        "entity_id": target["id"],
        "validity": "superseded",
        "supersedes_id": None,
    }
    assert (winner, loser) in await supersedes_links(sql)


async def test_equal_confidence_keeps_the_target_fact(client, sql):
    target, source = await create_entity(client, "Robert"), await create_entity(client, "Bob")
    winner = await anchor_fact(client, sql, target, "lives_in", "Boston", confidence=0.7)
    loser = await anchor_fact(client, sql, source, "lives_in", "Denver", confidence=0.7)
    await merge(client, target, source)
    assert (await fact_row(sql, winner))["validity"] == "active"
    assert (await fact_row(sql, loser))["validity"] == "superseded"


async def test_source_history_moves_to_the_target_too(client, sql):
    target, source = await create_entity(client, "Robert"), await create_entity(client, "Bob")
    old = await anchor_fact(client, sql, source, "lives_in", "Austin")
    new = await anchor_fact(client, sql, source, "lives_in", "Denver")
    body = (await merge(client, target, source)).json()
    assert body["facts_repointed"] == 2
    assert (await fact_row(sql, old))["entity_id"] == target["id"]
    history = (await client.get(f"/v1/facts/{new}/history")).json()
    assert [f["id"] for f in history] == [new, old]


async def test_aliases_merge_case_insensitively_with_the_source_name(client):
    target = await create_entity(client, "Robert", aliases=["Bob"])
    source = await create_entity(client, "Bobby", aliases=["bob", "ROBERT", "Rob", "rob"])
    body = (await merge(client, target, source)).json()
    assert body["target"]["aliases"] == ["Bob", "Bobby", "Rob"]
    assert body["aliases_added"] == ["Bobby", "Rob"]


async def test_metadata_merges_with_the_target_winning(client):
    target = await create_entity(client, "Robert", metadata={"a": 1, "shared": "target"})
    source = await create_entity(client, "Bob", metadata={"b": 2, "shared": "source"})
    body = (await merge(client, target, source)).json()
    assert body["target"]["metadata"] == {"a": 1, "b": 2, "shared": "target"}


async def test_source_is_tombstoned_with_merged_into_and_fresh_updated_at(client, sql):
    target, source = (
        await create_entity(client, "Robert"),
        await create_entity(client, "Bob", metadata={"k": "v"}),
    )
    await sql("UPDATE entities SET updated_at = '2020-01-01T00:00:00Z'")
    body = (await merge(client, target, source)).json()
    tombstone = (await client.get(f"/v1/entities/{source['id']}")).json()
    assert tombstone["metadata"] == {"k": "v"}
    assert tombstone["merged_into_id"] == target["id"]
    assert datetime.fromisoformat(tombstone["updated_at"]).year > 2020
    assert datetime.fromisoformat(body["target"]["updated_at"]).year > 2020


async def test_merge_writes_an_entity_merge_event(client, sql):
    target, source = (
        await create_entity(client, "Robert"),
        await create_entity(client, "Bob", aliases=["Bobby"]),
    )
    await anchor_fact(client, sql, target, "lives_in", "Boston", confidence=0.9)
    await anchor_fact(client, sql, source, "lives_in", "Denver", confidence=0.5)
    await anchor_fact(client, sql, source, "works_at", "Acme")
    await merge(client, target, source)
    [event] = await sql(
        "SELECT tenant_id, payload FROM memory_events WHERE event_type = 'entity_merge'"
    )
    assert event["tenant_id"] == "default"
    assert event["payload"] == {
        "source_entity_id": source["id"],
        "target_entity_id": target["id"],
        "facts_repointed": 2,
        "facts_superseded": 1,
        "aliases_added": ["Bob", "Bobby"],
    }


async def test_merge_response_shape(client):
    target, source = await create_entity(client, "Robert"), await create_entity(client, "Bob")
    response = await merge(client, target, source)
    body = response.json()
    assert body["source_entity_id"] == source["id"]
    assert body["target_entity_id"] == target["id"]
    assert body["target"]["id"] == target["id"]


async def test_merging_an_entity_into_itself_is_422(client):
    entity = await create_entity(client, "Robert")
    response = await merge(client, entity, entity)
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "source_id"


async def test_unknown_source_or_target_is_404(client):
    entity = await create_entity(client, "Robert")
    ghost = {"id": str(uuid.uuid4())}
    assert (await merge(client, entity, ghost)).status_code == 404
    assert (await merge(client, ghost, entity)).status_code == 404


async def test_entity_of_another_tenant_is_404(client, sql):
    entity = await create_entity(client, "Robert")
    [row] = await sql(
        "INSERT INTO entities (tenant_id, canonical_name, entity_type) "
        "VALUES ('other', 'Bob', 'person') RETURNING id::text AS id"
    )
    assert (await merge(client, entity, {"id": row["id"]})).status_code == 404
    [still] = await sql(
        "SELECT metadata, merged_into_id FROM entities WHERE id = :id", id=uuid.UUID(row["id"])
    )
    assert (still["metadata"], still["merged_into_id"]) == ({}, None)


async def test_already_merged_source_is_409(client):
    a, b, c = [await create_entity(client, n) for n in ("A", "B", "C")]
    assert (await merge(client, a, b)).status_code == 200
    response = await merge(client, c, b)
    assert response.status_code == 409
    assert "already merged" in response.json()["detail"]


async def test_merging_into_a_tombstone_is_409(client):
    a, b, c = [await create_entity(client, n) for n in ("A", "B", "C")]
    assert (await merge(client, a, b)).status_code == 200
    assert (await merge(client, b, c)).status_code == 409


async def test_failed_merge_changes_nothing(client, sql):
    a, b, c = [await create_entity(client, n) for n in ("A", "B", "C")]
    await merge(client, a, b)
    fact = await anchor_fact(client, sql, c, "lives_in", "Boston")
    await merge(client, b, c)
    assert (await fact_row(sql, fact))["entity_id"] == c["id"]
    assert (await client.get(f"/v1/entities/{c['id']}")).json()["metadata"] == {}


async def test_concurrent_opposite_merges_leave_one_consistent_entity(client, sql):
    a, b = await create_entity(client, "Alpha"), await create_entity(client, "Beta")
    facts = [
        await anchor_fact(client, sql, a, "lives_in", "Boston", confidence=0.8),
        await anchor_fact(client, sql, b, "lives_in", "Denver", confidence=0.9),
        await anchor_fact(client, sql, a, "works_at", "Acme"),
        await anchor_fact(client, sql, b, "likes", "chess"),
    ]
    first, second = await asyncio.gather(merge(client, a, b), merge(client, b, a))
    assert sorted([first.status_code, second.status_code]) == [200, 409]
    winner = first.json() if first.status_code == 200 else second.json()
    survivor = winner["target_entity_id"]
    entities = await sql("SELECT id::text AS id, merged_into_id::text AS merged_into FROM entities")
    tombstones = [e for e in entities if e["merged_into"] is not None]
    assert len(tombstones) == 1 and tombstones[0]["merged_into"] == survivor
    rows = await sql("SELECT id::text AS id, entity_id::text AS entity_id, validity FROM facts")
    assert {row["id"] for row in rows} == set(facts)
    assert {row["entity_id"] for row in rows} == {survivor}
    active = sorted(row["id"] for row in rows if row["validity"] == "active")
    assert active == sorted([facts[1], facts[2], facts[3]])
    [events] = await sql(
        "SELECT count(*) AS n FROM memory_events WHERE event_type = 'entity_merge'"
    )
    assert events["n"] == 1


async def test_concurrent_merges_of_one_source_into_two_targets(client, sql):
    a, b, c = [await create_entity(client, n) for n in ("A", "B", "C")]
    fact = await anchor_fact(client, sql, b, "lives_in", "Boston")
    first, second = await asyncio.gather(merge(client, a, b), merge(client, c, b))
    assert sorted([first.status_code, second.status_code]) == [200, 409]
    survivor = (first if first.status_code == 200 else second).json()["target_entity_id"]
    assert (await fact_row(sql, fact))["entity_id"] == survivor
    tombstone = (await client.get(f"/v1/entities/{b['id']}")).json()
    assert (tombstone["metadata"], tombstone["merged_into_id"]) == ({}, survivor)


async def test_concurrent_chain_merges_never_anchor_facts_to_a_tombstone(client, sql):
    a, b, c = [await create_entity(client, n) for n in ("A", "B", "C")]
    facts = [
        await anchor_fact(client, sql, entity, "lives_in", name)
        for entity, name in ((a, "x"), (b, "y"), (c, "z"))
    ]
    results = await asyncio.gather(merge(client, a, b), merge(client, b, c))
    assert all(r.status_code in (200, 409) for r in results)
    rows = await sql(
        "SELECT f.id::text AS id, e.merged_into_id FROM facts f "
        "JOIN entities e ON e.id = f.entity_id"
    )
    assert {row["id"] for row in rows} == set(facts)
    assert all(row["merged_into_id"] is None for row in rows)
    [dupes] = await sql(
        "SELECT count(*) AS n FROM (SELECT entity_id, scope, predicate "
        "FROM facts WHERE validity = 'active' GROUP BY 1, 2, 3 "
        "HAVING count(*) > 1) d"
    )
    assert dupes["n"] == 0


async def test_fact_stored_during_a_merge_is_never_anchored_to_the_tombstone(client, sql):
    a, b = await create_entity(client, "Alpha"), await create_entity(client, "Beta")
    for i in range(5):
        await anchor_fact(client, sql, b, f"p{i}", f"fact {i}")
    store = client.post(
        "/v1/facts",
        json={
            "subject": "Beta",
            "predicate": "late",
            "content": "stored while merging",
            "entity_id": b["id"],
        },
    )
    merged, stored = await asyncio.gather(merge(client, a, b), store)
    assert merged.status_code == 200
    assert stored.status_code in (201, 422)
    rows = await sql("SELECT count(*) AS n FROM facts WHERE entity_id = :id", id=uuid.UUID(b["id"]))
    assert rows[0]["n"] == 0
