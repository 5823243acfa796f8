"""Narrative arcs through HTTP: lifecycle, search, bad input, and the boundary job."""

import pytest

from tests.support.factories import create_entity, store_episode
from tests.support.http import post
from tests.support.jobs import job_context, run_job


async def _arc(client, title="Grant application for the river project", **fields):
    return await post(client, "/v1/arcs", title=title, arc_type="grant_process", **fields)


def _fields(response) -> set[str]:
    return {error["field"] for error in response.json()["errors"]}


async def test_arc_lifecycle_create_append_close(client):
    entity = await create_entity(client, "River Trust", "organization")
    first = await store_episode(client, "Drafted the grant proposal.")
    arc = await _arc(
        client,
        entity_ids=[entity["id"]],
        started_at="2026-01-05T09:00:00Z",
        key_events=[{"memory_type": "episode", "memory_id": first["id"], "description": "draft"}],
    )
    assert (arc["status"], arc["scope"], arc["ended_at"]) == ("active", "global", None)
    assert arc["entity_ids"] == [entity["id"]]
    second = await store_episode(client, "Submitted the proposal.")
    appended = await client.post(
        f"/v1/arcs/{arc['id']}/events",
        json={
            "memory_type": "episode",
            "memory_id": second["id"],
            "description": "submitted",
            "occurred_at": "2026-01-20T10:00:00Z",
        },
    )
    assert appended.status_code == 200
    assert [(e["memory_id"], e["description"]) for e in appended.json()["key_events"]] == [
        (first["id"], "draft"),
        (second["id"], "submitted"),
    ]
    closed = await client.post(
        f"/v1/arcs/{arc['id']}/close",
        json={
            "outcome": "Funded in full.",
            "lessons": ["Submit a week early."],
            "ended_at": "2026-02-01T00:00:00Z",
        },
    )
    assert closed.status_code == 200
    body = closed.json()
    assert (body["status"], body["outcome"], body["lessons"]) == (
        "completed",
        "Funded in full.",
        ["Submit a week early."],
    )
    assert body["ended_at"].startswith("2026-02-01")
    assert (await client.get(f"/v1/arcs/{arc['id']}")).json() == body


async def test_a_closed_arc_takes_no_events_and_no_second_close(client):
    arc = await _arc(client)
    episode = await store_episode(client)
    closed = await client.post(
        f"/v1/arcs/{arc['id']}/close", json={"outcome": "Dropped.", "status": "abandoned"}
    )
    assert closed.json()["status"] == "abandoned"
    event = await client.post(
        f"/v1/arcs/{arc['id']}/events", json={"memory_type": "episode", "memory_id": episode["id"]}
    )
    assert event.status_code == 409
    again = await client.post(f"/v1/arcs/{arc['id']}/close", json={"outcome": "x"})
    assert again.status_code == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "t", "arc_type": "birthday"}, "arc_type"),
        ({"title": "", "arc_type": "incident"}, "body.title"),
        ({"title": "t", "arc_type": "incident", "status": "completed"}, "body.status"),
        ({"title": "t", "arc_type": "incident", "started_at": 5}, "body.started_at"),
        (
            {
                "title": "t",
                "arc_type": "incident",
                "entity_ids": ["00000000-0000-4000-8000-000000000000"],
            },
            "entity_ids.0",
        ),
        (
            {
                "title": "t",
                "arc_type": "incident",
                "key_events": [
                    {"memory_type": "fact", "memory_id": "00000000-0000-4000-8000-000000000000"}
                ],
            },
            "key_events.0.memory_id",
        ),
    ],
)
async def test_bad_arc_is_a_422_naming_the_field(client, body, field):
    response = await client.post("/v1/arcs", json=body)
    assert response.status_code == 422, response.text
    assert field in _fields(response)


async def test_bad_event_and_close_are_422_naming_the_field(client):
    arc = await _arc(client, started_at="2026-01-05T09:00:00Z")
    event = await client.post(
        f"/v1/arcs/{arc['id']}/events",
        json={"memory_type": "episode", "memory_id": "00000000-0000-4000-8000-000000000000"},
    )
    assert (event.status_code, _fields(event)) == (422, {"memory_id"})
    early = await client.post(
        f"/v1/arcs/{arc['id']}/close", json={"outcome": "x", "ended_at": "2025-01-01T00:00:00Z"}
    )
    assert (early.status_code, _fields(early)) == (422, {"ended_at"})
    blank = await client.post(f"/v1/arcs/{arc['id']}/close", json={"outcome": " "})
    assert (blank.status_code, _fields(blank)) == (422, {"body.outcome"})


async def test_search_finds_arcs_by_their_lessons(client):
    grant = await _arc(client)
    outage = await post(client, "/v1/arcs", title="Database outage", arc_type="incident")
    await client.post(
        f"/v1/arcs/{outage['id']}/close",
        json={"outcome": "Restored from backup.", "lessons": ["Test the backups every month."]},
    )
    for mode in ("hybrid", "semantic", "keyword"):
        response = await client.post(
            "/v1/arcs/search", json={"query": "restore backups", "mode": mode, "limit": 1}
        )
        assert [hit["id"] for hit in response.json()["results"]] == [outage["id"]], mode
    only_grants = await client.post(
        "/v1/arcs/search", json={"query": "backups", "arc_type": "grant_process"}
    )
    assert [hit["id"] for hit in only_grants.json()["results"]] == [grant["id"]]


async def test_a_proposed_draft_is_edited_and_accepted(client):
    entity = await create_entity(client, "Harbour Board", "organization")
    draft = await _arc(client, title="Untitled", status="draft")
    edited = await client.patch(
        f"/v1/arcs/{draft['id']}",
        json={
            "title": "Harbour permit",
            "summary": "Permit for the new pier.",
            "entity_ids": [entity["id"]],
            "status": "active",
        },
    )
    assert edited.status_code == 200, edited.text
    body = edited.json()
    assert (body["title"], body["summary"], body["status"], body["entity_ids"]) == (
        "Harbour permit",
        "Permit for the new pier.",
        "active",
        [entity["id"]],
    )
    assert body["started_at"] == draft["started_at"]
    found = await client.post(
        "/v1/arcs/search", json={"query": "pier permit", "mode": "semantic", "limit": 1}
    )
    assert [hit["id"] for hit in found.json()["results"]] == [draft["id"]]


async def test_a_closed_arc_takes_no_patch_and_bad_patches_name_the_field(client):
    arc = await _arc(client)
    for body, field in [
        ({"arc_type": "birthday"}, "arc_type"),
        ({"status": "completed"}, "body.status"),
        ({"title": None}, "title"),
        ({"entity_ids": ["00000000-0000-4000-8000-000000000000"]}, "entity_ids.0"),
    ]:
        response = await client.patch(f"/v1/arcs/{arc['id']}", json=body)
        assert (response.status_code, field in _fields(response)) == (422, True), body
    await client.post(f"/v1/arcs/{arc['id']}/close", json={"outcome": "Done."})
    closed = await client.patch(f"/v1/arcs/{arc['id']}", json={"title": "Renamed"})
    assert closed.status_code == 409
    assert (await client.get(f"/v1/arcs/{arc['id']}")).json()["title"] == arc["title"]


async def test_unknown_and_foreign_arcs_are_404(client, tenant_client):
    arc = await _arc(client)
    other = await tenant_client("other")
    assert (await other.get(f"/v1/arcs/{arc['id']}")).status_code == 404
    assert (
        await other.post(f"/v1/arcs/{arc['id']}/close", json={"outcome": "x"})
    ).status_code == 404


async def _episodes_at(client, butler, *stamps):
    return [
        (await store_episode(client, f"turn at {stamp}", butler=butler, occurred_at=stamp))["id"]
        for stamp in stamps
    ]


async def test_boundary_job_proposes_draft_arcs_at_time_gaps(client, app, settings):
    morning = await _episodes_at(
        client, "planner", "2026-03-01T09:00:00Z", "2026-03-01T09:30:00Z", "2026-03-01T10:15:00Z"
    )
    await _episodes_at(client, "planner", "2026-03-01T15:00:00Z")  # alone: too small
    evening = await _episodes_at(client, "planner", "2026-03-02T20:00:00Z", "2026-03-02T21:00:00Z")
    await _episodes_at(client, "someone-else", "2026-03-01T09:10:00Z", "2026-03-01T09:20:00Z")
    job = await run_job(client, job_context(app, settings), "arc-boundaries", {"scope": "planner"})
    assert job["status"] == "succeeded", job
    result = job["result"]
    assert (
        result["episodes"],
        result["clusters"],
        result["arcs_created"],
        result["too_small"],
        result["gap_minutes"],
    ) == (6, 3, 2, 1, 120.0)
    arcs = (await client.get("/v1/arcs", params={"scope": "planner"})).json()["items"]
    spans = sorted(
        (
            a["started_at"],
            a["ended_at"],
            a["status"],
            a["arc_type"],
            [e["memory_id"] for e in a["key_events"]],
        )
        for a in arcs
    )
    assert spans == [
        (
            "2026-03-01T09:00:00+00:00",
            "2026-03-01T10:15:00+00:00",
            "draft",
            "interaction_arc",
            morning,
        ),
        (
            "2026-03-02T20:00:00+00:00",
            "2026-03-02T21:00:00+00:00",
            "draft",
            "interaction_arc",
            evening,
        ),
    ]


async def test_boundary_job_gap_is_a_parameter_and_reruns_propose_nothing_twice(
    client, app, settings
):
    await _episodes_at(
        client, "planner", "2026-03-01T09:00:00Z", "2026-03-01T09:40:00Z", "2026-03-01T10:00:00Z"
    )
    ctx = job_context(app, settings)
    first = await run_job(client, ctx, "arc-boundaries", {"scope": "planner", "gap_minutes": 30})
    assert (first["result"]["clusters"], first["result"]["arcs_created"]) == (2, 1)
    again = await run_job(client, ctx, "arc-boundaries", {"scope": "planner", "gap_minutes": 30})
    assert (again["result"]["arcs_created"], again["result"]["already_covered"]) == (0, 1)
    assert len((await client.get("/v1/arcs")).json()["items"]) == 1


async def test_boundary_job_leaves_a_cluster_that_may_still_grow(client, app, settings):
    await store_episode(client, "just now", butler="planner")
    await store_episode(client, "and again", butler="planner")
    job = await run_job(client, job_context(app, settings), "arc-boundaries", {"scope": "planner"})
    assert (job["result"]["still_open"], job["result"]["arcs_created"]) == (1, 0)


@pytest.mark.parametrize(
    ("body", "field"), [({}, "body.scope"), ({"scope": "p", "gap_minutes": 0}, "body.gap_minutes")]
)
async def test_bad_boundary_job_is_a_422_naming_the_field(client, body, field):
    response = await client.post("/v1/jobs/arc-boundaries", json=body)
    assert response.status_code == 422
    assert field in _fields(response)
