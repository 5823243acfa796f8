"""Graph traversal through HTTP: depth, direction, cycles, limits, entity anchors."""

import uuid

import pytest

from tests.support.factories import create_entity, ref, store_episode, store_fact, store_rule

# Every link of these graphs is made by the test itself.
pytestmark = pytest.mark.usefixtures("no_automatic_links")


async def episode(client, content="we talked about chess"):
    return ref("episode", await store_episode(client, content))


async def fact(client, content="likes chess", predicate=None, entity=None):
    """A fact about Ann; a fresh predicate unless given, so facts never supersede each other."""
    return ref(
        "fact",
        await store_fact(
            client,
            "Ann",
            predicate or f"p{uuid.uuid4().hex[:8]}",
            content,
            entity_id=entity[1] if entity else None,
        ),
    )


async def rule(client, content="suggest chess openings"):
    return ref("rule", await store_rule(client, content))


async def entity(client, name="Ann"):
    return ref("entity", await create_entity(client, name))


async def link(client, source, target, relation="related_to"):
    response = await client.post(
        "/v1/links",
        json={
            "source_type": source[0],
            "source_id": source[1],
            "target_type": target[0],
            "target_id": target[1],
            "relation": relation,
        },
    )
    assert response.status_code == 201, response.text


async def graph(client, root, **params):
    response = await client.get(f"/v1/graph/{root[0]}/{root[1]}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def node_hops(result):
    return {(n["type"], n["id"]): n["hop"] for n in result["nodes"]}


def edge_set(result):
    return {
        (
            (e["source_type"], e["source_id"]),
            (e["target_type"], e["target_id"]),
            e["relation"],
            e["hop"],
        )
        for e in result["edges"]
    }


async def chain(client, length):
    nodes = [await fact(client, f"fact {i}") for i in range(length)]
    for a, b in zip(nodes, nodes[1:], strict=False):
        await link(client, a, b)
    return nodes


async def test_one_hop_follows_links_in_both_directions(client):
    center, up, down = await fact(client), await episode(client), await rule(client)
    await link(client, center, up, "derived_from")
    await link(client, down, center, "supports")
    result = await graph(client, center)
    assert node_hops(result) == {center: 0, up: 1, down: 1}
    assert edge_set(result) == {(center, up, "derived_from", 1), (down, center, "supports", 1)}
    assert result["truncated"] is False
    assert (result["root_type"], result["root_id"], result["hops"]) == ("fact", center[1], 1)


async def test_hops_bound_the_depth(client):
    nodes = await chain(client, 5)
    assert node_hops(await graph(client, nodes[0], hops=1)) == {nodes[0]: 0, nodes[1]: 1}
    three = await graph(client, nodes[0], hops=3)
    assert node_hops(three) == {nodes[0]: 0, nodes[1]: 1, nodes[2]: 2, nodes[3]: 3}
    assert sorted(e["hop"] for e in three["edges"]) == [1, 2, 3]


async def test_cycles_terminate_and_each_node_appears_once(client):
    a, b, c = await chain(client, 3)
    await link(client, c, a)
    result = await graph(client, a, hops=3)
    assert node_hops(result) == {a: 0, b: 1, c: 1}
    assert edge_set(result) == {
        (a, b, "related_to", 1),
        (c, a, "related_to", 1),
        (b, c, "related_to", 2),
    }


async def test_edge_between_two_hop_one_nodes_needs_a_second_hop(client):
    a, b, c = await chain(client, 3)
    await link(client, c, a)
    assert edge_set(await graph(client, a, hops=1)) == {
        (a, b, "related_to", 1),
        (c, a, "related_to", 1),
    }


async def test_node_limit_truncates_the_neighbourhood(client):
    center = await fact(client, "center")
    leaves = [await episode(client, f"leaf {i}") for i in range(5)]
    for leaf in leaves:
        await link(client, center, leaf)
    result = await graph(client, center, limit=3)
    kept = sorted(leaves, key=lambda n: n[1])[:2]
    assert node_hops(result) == {center: 0, kept[0]: 1, kept[1]: 1}
    assert edge_set(result) == {(center, leaf, "related_to", 1) for leaf in kept}
    assert result["truncated"] is True


async def test_limit_equal_to_the_neighbourhood_is_not_truncated(client):
    a, b, c = await chain(client, 3)
    assert (await graph(client, a, hops=2, limit=3))["truncated"] is False


async def test_relations_filter_the_edges_followed(client):
    center, kept, skipped = await fact(client), await episode(client), await rule(client)
    await link(client, center, kept, "derived_from")
    await link(client, center, skipped, "contradicts")
    result = await graph(client, center, relations=["derived_from", "supports"])
    assert node_hops(result) == {center: 0, kept: 1}


async def test_entity_neighbours_are_its_facts_and_then_their_links(client):
    ann = await entity(client)
    likes = await fact(client, "likes chess", entity=ann)
    lives = await fact(client, "lives in Boston", entity=ann)
    source = await episode(client)
    await link(client, likes, source, "derived_from")
    one = await graph(client, ann)
    assert node_hops(one) == {ann: 0, likes: 1, lives: 1}
    assert edge_set(one) == {(likes, ann, "about", 1), (lives, ann, "about", 1)}
    two = await graph(client, ann, hops=2)
    assert node_hops(two)[source] == 2


async def test_typed_entity_relations_are_nodes_and_edges_to_the_requested_hops(client):
    ann, acme, bob = await entity(client), await entity(client, "Acme"), await entity(client, "Bob")
    policy = await fact(client, "pays on Fridays")
    for source, target, relation, strength in (
        (ann, acme, "works_at", 0.9),
        (bob, ann, "knows", 0.5),
        (acme, policy, "related_to", 1.0),
    ):
        response = await client.post(
            "/v1/links",
            json={
                "source_type": source[0],
                "source_id": source[1],
                "target_type": target[0],
                "target_id": target[1],
                "relation": relation,
                "strength": strength,
            },
        )
        assert response.status_code == 201, response.text
    one = await graph(client, ann)
    assert node_hops(one) == {ann: 0, acme: 1, bob: 1}
    assert edge_set(one) == {(ann, acme, "works_at", 1), (bob, ann, "knows", 1)}
    strengths = {e["relation"]: e["strength"] for e in one["edges"]}
    assert strengths == {"works_at": 0.9, "knows": 0.5}
    two = await graph(client, ann, hops=2)
    assert node_hops(two) == {ann: 0, acme: 1, bob: 1, policy: 2}
    assert (acme, policy, "related_to", 2) in edge_set(two)
    only_work = await graph(client, ann, relations=["works_at"])
    assert node_hops(only_work) == {ann: 0, acme: 1}


async def test_fact_shows_its_entity_as_neighbour(client):
    ann = await entity(client)
    likes = await fact(client, "likes chess", entity=ann)
    result = await graph(client, likes)
    assert node_hops(result) == {likes: 0, ann: 1}
    [entity_node] = [n for n in result["nodes"] if n["type"] == "entity"]
    assert (entity_node["summary"], entity_node["state"]) == ("Ann (person)", "active")


async def test_about_can_be_left_out(client):
    ann = await entity(client)
    likes = await fact(client, "likes chess", entity=ann)
    result = await graph(client, likes, relations=["related_to"])
    assert node_hops(result) == {likes: 0}


async def test_nodes_carry_summary_and_state(client):
    center = await fact(client, "likes chess", predicate="likes")
    forgotten = await rule(client, "x" * 300)
    await link(client, center, forgotten)
    await client.post(f"/v1/rules/{forgotten[1]}/forget")
    nodes = {n["type"]: n for n in (await graph(client, center))["nodes"]}
    assert nodes["fact"]["summary"] == "Ann likes: likes chess"
    assert nodes["fact"]["state"] == "active"
    assert nodes["rule"]["state"] == "forgotten"
    assert nodes["rule"]["summary"] == "x" * 159 + "…"


async def test_links_to_missing_rows_are_skipped(client, sql):
    center = await fact(client)
    await sql(
        "INSERT INTO memory_links (tenant_id, source_type, source_id, target_type, "
        "target_id, relation) VALUES ('default', 'fact', :s, 'rule', :t, 'supports')",
        s=uuid.UUID(center[1]),
        t=uuid.uuid4(),
    )
    result = await graph(client, center)
    assert node_hops(result) == {center: 0}
    assert result["edges"] == []


async def test_unknown_root_is_404(client):
    response = await client.get(f"/v1/graph/fact/{uuid.uuid4()}")
    assert response.status_code == 404


async def test_out_of_range_parameters_are_422(client):
    node = await fact(client)
    for params in (
        {"hops": 0},
        {"hops": 4},
        {"limit": 0},
        {"limit": 501},
        {"relations": "caused_by"},
    ):
        response = await client.get(f"/v1/graph/fact/{node[1]}", params=params)
        assert response.status_code == 422, params
    assert (await client.get(f"/v1/graph/memory/{node[1]}")).status_code == 422
