"""Every listing reads its parameters from its query model and refuses unknown ones."""

import uuid

import pytest

# A listing and parameters it declares, each given a value that matches nothing.
LISTINGS = [
    ("/v1/arcs", {"scope": "s", "arc_type": "t", "status": "active"}),
    ("/v1/entities", {"entity_type": "person", "name": "n", "include_merged": "true"}),
    (
        "/v1/episodes",
        {
            "butler": "b",
            "session_id": "s",
            "consolidation_status": "pending",
            "consolidated": "false",
            "include_expired": "true",
        },
    ),
    (
        "/v1/facts",
        {
            "subject": "s",
            "predicate": "p",
            "scope": "s",
            "validity": "active",
            "entity_id": str(uuid.uuid4()),
            "as_of": "2024-01-01T00:00:00Z",
            "known_at": "2024-01-01T00:00:00Z",
        },
    ),
    ("/v1/jobs", {"kind": "decay", "status": "queued"}),
    ("/v1/ledgers/l/events", {"agent_id": "a", "kind": "k"}),
    (
        "/v1/procedures",
        {"agent_id": "a", "name": "n", "status": "draft", "include_superseded": "true"},
    ),
    ("/v1/rules", {"scope": "s", "maturity": "proven", "include_forgotten": "true"}),
    ("/v1/runs", {"task_id": "t", "success": "true"}),
]


@pytest.mark.parametrize(("path", "params"), LISTINGS)
async def test_a_listing_takes_its_parameters_and_refuses_a_typo(client, path, params):
    answer = await client.get(path, params={**params, "limit": 2})
    assert answer.status_code == 200, answer.text
    assert (answer.json()["items"], answer.json()["next_cursor"]) == ([], None)
    typo = await client.get(path, params={**params, "limt": 2})
    assert typo.status_code == 422
    assert typo.json()["errors"][0]["field"] == "query.limt"


@pytest.mark.parametrize(("path", "params"), LISTINGS)
async def test_a_listing_names_a_parameter_out_of_bounds(client, path, params):
    answer = await client.get(path, params={**params, "limit": 201})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["field"] == "query.limit"
