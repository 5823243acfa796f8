"""Memory links through HTTP: validation, idempotency, direction, deletion, cascade."""

import uuid
from datetime import UTC, datetime

import pytest

from tests.support.factories import ref, store_episode, store_fact, store_rule


async def episode(client, content="we talked about chess"):
    return ref("episode", await store_episode(client, content))


async def fact(client):
    return ref("fact", await store_fact(client, "Ann", "likes", "likes chess"))


async def rule(client):
    return ref("rule", await store_rule(client, "suggest chess openings"))


def body(source, target, relation="derived_from"):
    return {
        "source_type": source[0],
        "source_id": source[1],
        "target_type": target[0],
        "target_id": target[1],
        "relation": relation,
    }


async def link(client, source, target, relation="derived_from"):
    response = await client.post("/v1/links", json=body(source, target, relation))
    assert response.status_code == 201, response.text
    return response.json()


async def listed(client, node, **params):
    response = await client.get(
        "/v1/links", params={"memory_type": node[0], "memory_id": node[1], **params}
    )
    assert response.status_code == 200, response.text
    return response.json()


def ends(links):
    return [
        ((x["source_type"], x["source_id"]), (x["target_type"], x["target_id"]), x["relation"])
        for x in links
    ]


async def test_new_link_is_201_with_its_fields(client):
    source, target = await fact(client), await episode(client)
    response = await client.post("/v1/links", json=body(source, target))
    assert response.status_code == 201
    created = response.json()
    assert {k: v for k, v in created.items() if k not in ("created_at", "id", "created_by")} == {
        **body(source, target),
        "strength": 1.0,
        "reasoning": None,
    }


async def test_repeated_link_is_200_with_the_existing_link(client, sql):
    source, target = await fact(client), await episode(client)
    created = await link(client, source, target)
    again = await client.post("/v1/links", json=body(source, target))
    assert again.status_code == 200
    assert again.json() == created
    [row] = await sql("SELECT count(*) AS n FROM memory_links")
    assert row["n"] == 1


async def test_same_pair_with_another_relation_is_a_second_link(client):
    source, target = await fact(client), await episode(client)
    await link(client, source, target, "derived_from")
    await link(client, source, target, "supports")
    listed_links = (await listed(client, source))["items"]
    assert sorted(ends(listed_links)) == sorted(
        [(source, target, "derived_from"), (source, target, "supports")]
    )


async def test_opposite_direction_is_a_separate_link(client):
    a, b = await fact(client), await rule(client)
    await link(client, a, b, "supports")
    await link(client, b, a, "related_to")
    assert len((await listed(client, a))["items"]) == 2


@pytest.mark.parametrize(
    "relation", ["derived_from", "supports", "contradicts", "supersedes", "related_to"]
)
async def test_every_relation_is_accepted(client, relation):
    source, target = await fact(client), await rule(client)
    assert (await link(client, source, target, relation))["relation"] == relation


async def test_unknown_relation_is_422(client):
    source, target = await fact(client), await rule(client)
    response = await client.post("/v1/links", json=body(source, target, "caused_by"))
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.relation"


async def test_unknown_memory_type_is_422(client):
    source = await fact(client)
    response = await client.post("/v1/links", json=body(source, ("planet", str(uuid.uuid4()))))
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.target_type"


async def test_missing_end_is_422_naming_it(client):
    real = await fact(client)
    response = await client.post("/v1/links", json=body(real, ("rule", str(uuid.uuid4()))))
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "target_id"
    response = await client.post("/v1/links", json=body(("episode", str(uuid.uuid4())), real))
    assert response.json()["errors"][0]["field"] == "source_id"


async def test_end_with_the_wrong_type_is_422(client):
    real = await fact(client)
    target = await rule(client)
    response = await client.post("/v1/links", json=body(real, ("episode", target[1])))
    assert response.status_code == 422


async def test_memory_of_another_tenant_is_422(client, sql):
    real = await fact(client)
    [row] = await sql(
        "INSERT INTO rules (tenant_id, content) VALUES ('other', 'x') RETURNING id::text AS id"
    )
    response = await client.post("/v1/links", json=body(real, ("rule", row["id"])))
    assert response.status_code == 422


async def test_self_link_is_422(client):
    node = await fact(client)
    assert (await client.post("/v1/links", json=body(node, node))).status_code == 422


async def test_list_by_direction(client):
    center, upstream, downstream = await fact(client), await episode(client), await rule(client)
    await link(client, center, upstream, "derived_from")
    await link(client, downstream, center, "supports")
    assert ends((await listed(client, center, direction="outgoing"))["items"]) == [
        (center, upstream, "derived_from")
    ]
    assert ends((await listed(client, center, direction="incoming"))["items"]) == [
        (downstream, center, "supports")
    ]
    both = ends((await listed(client, center))["items"])
    assert sorted(both) == sorted(
        [(center, upstream, "derived_from"), (downstream, center, "supports")]
    )


async def test_list_filters_by_relation(client):
    center, a, b = await fact(client), await episode(client), await rule(client)
    await link(client, center, a, "derived_from")
    await link(client, center, b, "related_to")
    assert ends((await listed(client, center, relation="related_to"))["items"]) == [
        (center, b, "related_to")
    ]


async def test_list_paginates_newest_first(client, sql):
    center = await fact(client)
    others = [await episode(client, f"episode {i}") for i in range(3)]
    for i, other in enumerate(others):
        await link(client, center, other)
        await sql(
            "UPDATE memory_links SET created_at = :t WHERE target_id = :id",
            t=datetime(2026, 1, i + 1, tzinfo=UTC),
            id=uuid.UUID(other[1]),
        )
    first = await listed(client, center, limit=2)
    assert [x["target_id"] for x in first["items"]] == [others[2][1], others[1][1]]
    second = await listed(client, center, limit=2, cursor=first["next_cursor"])
    assert [x["target_id"] for x in second["items"]] == [others[0][1]]
    assert second["next_cursor"] is None


async def test_list_of_unknown_memory_is_404(client):
    response = await client.get(
        "/v1/links", params={"memory_type": "fact", "memory_id": str(uuid.uuid4())}
    )
    assert response.status_code == 404


async def test_bad_cursor_is_422(client):
    node = await fact(client)
    response = await client.get(
        "/v1/links", params={"memory_type": "fact", "memory_id": node[1], "cursor": "nope"}
    )
    assert response.status_code == 422


async def test_delete_link_then_it_is_gone(client):
    source, target = await fact(client), await episode(client)
    await link(client, source, target)
    key = {
        "source_type": source[0],
        "source_id": source[1],
        "target_type": target[0],
        "target_id": target[1],
    }
    assert (await client.delete("/v1/links", params=key)).status_code == 204
    assert (await listed(client, source))["items"] == []
    assert (await client.delete("/v1/links", params=key)).status_code == 404


async def test_deleting_a_memory_row_deletes_its_links(client, sql):
    doomed, kept_a, kept_b = await episode(client), await fact(client), await rule(client)
    await link(client, kept_a, doomed, "derived_from")
    await link(client, doomed, kept_b, "supports")
    await link(client, kept_a, kept_b, "related_to")
    await sql("DELETE FROM episodes WHERE id = :id", id=uuid.UUID(doomed[1]))
    rows = await sql("SELECT source_type, target_type FROM memory_links")
    assert [(r["source_type"], r["target_type"]) for r in rows] == [("fact", "rule")]


async def test_forgetting_a_memory_keeps_its_links(client):
    source, target = await fact(client), await episode(client)
    await link(client, source, target)
    await client.post(f"/v1/facts/{source[1]}/forget")
    assert len((await listed(client, source))["items"]) == 1
