"""The graph through HTTP starts from runs, procedures and arcs, and shows them among a
memory's neighbours when linked."""

import uuid

import pytest

from tests.support.factories import ref, store_fact
from tests.support.http import post

# Every link of these graphs is made by the test itself.
pytestmark = pytest.mark.usefixtures("no_automatic_links")


async def link(client, source, target, relation="related_to"):
    await post(
        client,
        "/v1/links",
        source_type=source[0],
        source_id=source[1],
        target_type=target[0],
        target_id=target[1],
        relation=relation,
    )


async def graph(client, root, **params):
    response = await client.get(f"/v1/graph/{root[0]}/{root[1]}", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def nodes(result):
    return {(n["type"], n["id"]): (n["hop"], n["state"]) for n in result["nodes"]}


async def records(client):
    run = ref(
        "run",
        await post(
            client,
            "/v1/runs",
            task_id="move-office",
            summary="planned the move",
            success=True,
            finished_at="2026-11-26T10:00:00Z",
            started_at="2026-11-26T09:00:00Z",
        ),
    )
    procedure = ref(
        "procedure",
        await post(
            client,
            "/v1/procedures",
            agent_id="ops",
            name="office move",
            steps=[{"step": 1, "action": "pack"}],
        ),
    )
    arc = ref(
        "arc", await post(client, "/v1/arcs", title="The Boulder move", arc_type="project_phase")
    )
    return run, procedure, arc


async def test_graph_starts_from_a_run(client):
    run, _, _ = await records(client)
    fact = ref("fact", await store_fact(client, "Globex", "office", "Globex moves to Boulder"))
    await link(client, run, fact, "derived_from")
    result = await graph(client, run)
    assert (result["root_type"], result["root_id"]) == run
    assert nodes(result) == {run: (0, "succeeded"), fact: (1, "active")}
    assert [(e["source_id"], e["target_id"], e["relation"]) for e in result["edges"]] == [
        (run[1], fact[1], "derived_from")
    ]


async def test_runs_procedures_and_arcs_are_a_facts_neighbours(client):
    run, procedure, arc = await records(client)
    fact = ref("fact", await store_fact(client, "Globex", "office", "Globex moves to Boulder"))
    await link(client, run, fact)
    await link(client, fact, procedure)
    await link(client, arc, fact)
    result = await graph(client, fact)
    assert nodes(result) == {
        fact: (0, "active"),
        run: (1, "succeeded"),
        procedure: (1, "draft"),
        arc: (1, "active"),
    }
    summaries = {n["type"]: n["summary"] for n in result["nodes"]}
    assert summaries["run"] == "move-office: planned the move"
    assert summaries["procedure"] == "office move"
    assert summaries["arc"] == "The Boulder move"


async def test_graph_walks_on_through_procedures_and_arcs(client):
    _, procedure, arc = await records(client)
    fact = ref("fact", await store_fact(client, "Globex", "office", "Globex moves to Boulder"))
    await link(client, procedure, arc)
    await link(client, arc, fact)
    assert nodes(await graph(client, procedure, hops=2)) == {
        procedure: (0, "draft"),
        arc: (1, "active"),
        fact: (2, "active"),
    }


@pytest.mark.parametrize("node_type", ["run", "procedure", "arc"])
async def test_unknown_record_root_is_404(client, node_type):
    response = await client.get(f"/v1/graph/{node_type}/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_deleting_an_arc_deletes_its_links(client, sql):
    _, _, arc = await records(client)
    fact = ref("fact", await store_fact(client, "Globex", "office", "Globex moves to Boulder"))
    await link(client, arc, fact)
    await sql("DELETE FROM arcs WHERE id = :id", id=uuid.UUID(arc[1]))
    assert nodes(await graph(client, fact)) == {fact: (0, "active")}
    assert await sql("SELECT 1 FROM memory_links WHERE source_type = 'arc'") == []
