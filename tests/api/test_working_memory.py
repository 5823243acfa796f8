"""Working memory through HTTP: create-or-replace, merge patch, scratchpad keys, ETags, expiry."""

import asyncio
from datetime import UTC, datetime

import pytest

from tests.support.jobs import job_context, run_job

BASE = "/v1/working-memory/planner/session-1"
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
DAY = 24 * 3600


async def _put(client, path=BASE, **document):
    response = await client.put(path, json=document)
    assert response.status_code in (200, 201), response.text
    return response


async def _patch(client, patch, *, path=BASE, headers=None):
    return await client.patch(path, json=patch, headers={**MERGE_PATCH, **(headers or {})})


def _seconds_until(stamp: str) -> float:
    return (datetime.fromisoformat(stamp) - datetime.now(UTC)).total_seconds()


def _field(response) -> str:
    return response.json()["errors"][0]["field"]


async def test_put_creates_then_replaces_with_a_new_etag(client):
    created = await _put(client, active_context={"project": "apollo"}, scratchpad={"draft": "v1"})
    assert created.status_code == 201
    body = created.json()
    assert (body["agent_id"], body["session_id"], body["version"]) == ("planner", "session-1", 1)
    assert created.headers["ETag"] == body["etag"]

    replaced = await _put(client, decisions=[{"chose": "plan B"}])
    assert replaced.status_code == 200
    again = replaced.json()
    assert again["version"] == 2
    assert again["etag"] != body["etag"]
    assert (again["active_context"], again["scratchpad"], again["decisions"]) == (
        {},
        {},
        [{"chose": "plan B"}],
    )
    assert again["created_at"] == body["created_at"]


async def test_get_returns_the_record_and_its_etag(client):
    stored = (
        await _put(client, retrieved_memory_ids=["00000000-0000-4000-8000-000000000001"])
    ).json()
    response = await client.get(BASE)
    assert response.status_code == 200
    assert response.headers["ETag"] == stored["etag"]
    assert response.json()["retrieved_memory_ids"] == ["00000000-0000-4000-8000-000000000001"]


async def test_unknown_working_memory_is_a_404_problem(client):
    response = await client.get("/v1/working-memory/planner/nobody")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_records_are_per_agent_and_session(client):
    await _put(client, scratchpad={"who": "first"})
    await _put(client, "/v1/working-memory/planner/session-2", scratchpad={"who": "second"})
    await _put(client, "/v1/working-memory/writer/session-1", scratchpad={"who": "third"})
    assert (await client.get(BASE)).json()["scratchpad"] == {"who": "first"}


async def test_merge_patch_merges_objects_and_null_removes_keys(client):
    await _put(
        client,
        active_context={"project": "apollo", "goals": ["ship"], "owner": "ann"},
        scratchpad={"a": 1, "b": {"x": 1, "y": 2}},
    )
    response = await _patch(
        client,
        {
            "active_context": {"owner": None, "goals": ["test"]},
            "scratchpad": {"b": {"y": None, "z": 3}},
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["active_context"] == {"project": "apollo", "goals": ["test"]}
    assert body["scratchpad"] == {"a": 1, "b": {"x": 1, "z": 3}}
    assert body["version"] == 2
    assert response.headers["ETag"] == body["etag"]


async def test_top_level_null_resets_a_member(client):
    await _put(client, decisions=["one"], ttl_seconds=600)
    body = (await _patch(client, {"decisions": None, "ttl_seconds": None})).json()
    assert (body["decisions"], body["ttl_seconds"]) == ([], DAY)


async def test_merge_patch_needs_the_merge_patch_media_type(client):
    await _put(client)
    response = await client.patch(BASE, json={"scratchpad": {"a": 1}})
    assert response.status_code == 415
    assert _field(response) == "Content-Type"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"colour": "blue"}, "body.colour"),
        ({"agent_id": "someone-else"}, "body.agent_id"),
        ({"retrieved_memory_ids": ["not-a-uuid"]}, "body.retrieved_memory_ids.0"),
        ({"active_context": "flat"}, "body.active_context"),
        ({"ttl_seconds": 5}, "body.ttl_seconds"),
    ],
)
async def test_invalid_patch_result_is_a_422_naming_the_field(client, patch, field):
    await _put(client, scratchpad={"kept": True})
    response = await _patch(client, patch)
    assert response.status_code == 422, response.text
    assert _field(response) == field
    assert (await client.get(BASE)).json()["scratchpad"] == {"kept": True}


async def test_patch_of_a_missing_record_is_a_404(client):
    assert (await _patch(client, {"scratchpad": {"a": 1}})).status_code == 404


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"scratchpad": []}, "body.scratchpad"),
        ({"ttl_seconds": 10}, "body.ttl_seconds"),
        ({"decisions": "none"}, "body.decisions"),
        ({"expires_at": "2030-01-01T00:00:00Z"}, "body.expires_at"),
    ],
)
async def test_invalid_put_is_a_422_naming_the_field(client, document, field):
    response = await client.put(BASE, json=document)
    assert response.status_code == 422
    assert _field(response) == field


async def test_stale_if_match_is_412_and_the_write_is_refused(client):
    first = (await _put(client, scratchpad={"n": 1})).json()["etag"]
    await _patch(client, {"scratchpad": {"n": 2}}, headers={"If-Match": first})
    # A second writer still holding the first ETag loses, visibly.
    stale = await _patch(client, {"scratchpad": {"n": 99}}, headers={"If-Match": first})
    assert stale.status_code == 412
    assert stale.headers["content-type"] == "application/problem+json"
    put_stale = await client.put(BASE, json={"scratchpad": {"n": 99}}, headers={"If-Match": first})
    assert put_stale.status_code == 412
    assert (await client.get(BASE)).json()["scratchpad"] == {"n": 2}


async def test_matching_if_match_writes(client):
    etag = (await _put(client, scratchpad={"n": 1})).json()["etag"]
    response = await client.put(
        BASE, json={"scratchpad": {"n": 2}}, headers={"If-Match": f'"other", {etag}'}
    )
    assert response.status_code == 200
    star = await _patch(client, {"scratchpad": {"n": 3}}, headers={"If-Match": "*"})
    assert star.status_code == 200


async def test_if_match_without_a_record_is_412(client):
    response = await client.put(BASE, json={}, headers={"If-Match": "*"})
    assert response.status_code == 412
    assert (await client.get(BASE)).status_code == 404


async def test_if_none_match_star_creates_once_and_refuses_an_existing_record(client):
    created = await client.put(
        BASE, json={"scratchpad": {"owner": "first"}}, headers={"If-None-Match": "*"}
    )
    assert created.status_code == 201
    again = await client.put(
        BASE, json={"scratchpad": {"owner": "second"}}, headers={"If-None-Match": "*"}
    )
    assert again.status_code == 412
    assert again.headers["content-type"] == "application/problem+json"
    assert _field(again) == "If-None-Match"
    assert (await client.get(BASE)).json()["scratchpad"] == {"owner": "first"}


async def test_two_concurrent_creations_one_wins(client):
    responses = await asyncio.gather(
        *(
            client.put(BASE, json={"scratchpad": {"owner": name}}, headers={"If-None-Match": "*"})
            for name in ("a", "b")
        )
    )
    assert sorted(r.status_code for r in responses) == [201, 412]
    [winner] = [r for r in responses if r.status_code == 201]
    assert (await client.get(BASE)).json()["scratchpad"] == winner.json()["scratchpad"]


async def test_if_none_match_star_creates_over_an_expired_record(client, sql):
    await _put(client, scratchpad={"old": True})
    await sql("UPDATE working_memories SET expires_at = now() - interval '1 second'")
    created = await client.put(
        BASE, json={"scratchpad": {"new": True}}, headers={"If-None-Match": "*"}
    )
    assert created.status_code == 201
    assert created.json()["version"] == 1


async def test_if_none_match_with_the_records_etag_is_412(client):
    etag = (await _put(client, scratchpad={"n": 1})).json()["etag"]
    same = await client.put(
        BASE, json={"scratchpad": {"n": 2}}, headers={"If-None-Match": f'"other", W/{etag}'}
    )
    assert same.status_code == 412
    other = await client.put(
        BASE, json={"scratchpad": {"n": 3}}, headers={"If-None-Match": '"other"'}
    )
    assert other.status_code == 200
    assert other.json()["scratchpad"] == {"n": 3}


async def test_weak_etags_never_match(client):
    etag = (await _put(client)).json()["etag"]
    response = await _patch(client, {"scratchpad": {"a": 1}}, headers={"If-Match": f"W/{etag}"})
    assert response.status_code == 412


async def test_concurrent_patches_of_different_keys_all_land(client):
    await _put(client)
    responses = await asyncio.gather(
        *(_patch(client, {"scratchpad": {f"k{i}": i}}) for i in range(10))
    )
    assert all(r.status_code == 200 for r in responses)
    body = (await client.get(BASE)).json()
    assert body["scratchpad"] == {f"k{i}": i for i in range(10)}
    assert body["version"] == 11


async def test_scratchpad_keys_can_be_set_read_and_deleted(client):
    await _put(client, scratchpad={"keep": "me"})
    put = await client.put(f"{BASE}/scratchpad/plan", json={"value": {"steps": [1, 2]}})
    assert put.status_code == 200
    assert put.json()["scratchpad"] == {"keep": "me", "plan": {"steps": [1, 2]}}
    got = await client.get(f"{BASE}/scratchpad/plan")
    assert got.json() == {"key": "plan", "value": {"steps": [1, 2]}}
    assert got.headers["ETag"] == put.json()["etag"]
    deleted = await client.delete(f"{BASE}/scratchpad/plan")
    assert deleted.status_code == 200
    assert deleted.json()["scratchpad"] == {"keep": "me"}
    assert (await client.get(f"{BASE}/scratchpad/plan")).status_code == 404
    assert (await client.delete(f"{BASE}/scratchpad/plan")).status_code == 404


async def test_scratchpad_null_value_is_stored_as_null(client):
    await _put(client)
    await client.put(f"{BASE}/scratchpad/nothing", json={"value": None})
    assert (await client.get(f"{BASE}/scratchpad/nothing")).json() == {
        "key": "nothing",
        "value": None,
    }


async def test_scratchpad_write_honours_if_match(client):
    etag = (await _put(client)).json()["etag"]
    await client.put(f"{BASE}/scratchpad/a", json={"value": 1})
    stale = await client.put(f"{BASE}/scratchpad/b", json={"value": 2}, headers={"If-Match": etag})
    assert stale.status_code == 412
    assert (
        await client.delete(f"{BASE}/scratchpad/a", headers={"If-Match": etag})
    ).status_code == 412


async def test_scratchpad_write_needs_a_record_and_a_value(client):
    assert (await client.put(f"{BASE}/scratchpad/a", json={"value": 1})).status_code == 404
    await _put(client)
    response = await client.put(f"{BASE}/scratchpad/a", json={"val": 1})
    assert response.status_code == 422
    assert "body.value" in {e["field"] for e in response.json()["errors"]}


async def test_default_lifetime_is_24_hours_and_ttl_seconds_overrides_it(client):
    default = (await _put(client)).json()
    assert default["ttl_seconds"] == DAY
    assert DAY - 60 < _seconds_until(default["expires_at"]) <= DAY
    short = (await _put(client, ttl_seconds=120)).json()
    assert 60 < _seconds_until(short["expires_at"]) <= 120


async def test_every_use_extends_the_lifetime(client, sql):
    await _put(client)
    await sql("UPDATE working_memories SET expires_at = now() + interval '1 minute'")
    body = (await client.get(BASE)).json()
    assert _seconds_until(body["expires_at"]) > DAY - 60


async def test_expired_record_is_never_returned(client, sql):
    await _put(client, scratchpad={"secret": "old"})
    await sql("UPDATE working_memories SET expires_at = now() - interval '1 second'")
    assert (await client.get(BASE)).status_code == 404
    assert (await client.get(f"{BASE}/scratchpad/secret")).status_code == 404
    assert (await _patch(client, {"scratchpad": {"a": 1}})).status_code == 404


async def test_put_over_an_expired_record_starts_afresh(client, sql):
    old = (await _put(client, scratchpad={"secret": "old"})).json()
    await _put(client, scratchpad={"secret": "older"})
    await sql("UPDATE working_memories SET expires_at = now() - interval '1 second'")
    response = await client.put(BASE, json={"scratchpad": {"fresh": True}})
    assert response.status_code == 201
    body = response.json()
    assert (body["version"], body["scratchpad"]) == (1, {"fresh": True})
    assert body["etag"] != old["etag"]


async def test_cleanup_job_deletes_expired_records_only(client, app, sql, settings, tenant_client):
    await _put(client)
    await _put(client, "/v1/working-memory/planner/live")
    await _put(await tenant_client("other"), "/v1/working-memory/planner/theirs")
    await sql(
        "UPDATE working_memories SET expires_at = now() - interval '1 second' "
        "WHERE session_id IN ('session-1', 'theirs')"
    )
    job = await run_job(client, job_context(app, settings), "cleanup")
    assert job["status"] == "succeeded"
    assert job["result"]["working_memories_deleted"] == 1
    rows = await sql("SELECT session_id FROM working_memories ORDER BY 1")
    # The job is the caller's: another tenant's expired record waits for its own cleanup.
    assert [row["session_id"] for row in rows] == ["live", "theirs"]


async def test_delete_ends_the_record(client):
    etag = (await _put(client)).json()["etag"]
    assert (await client.delete(BASE, headers={"If-Match": '"stale"'})).status_code == 412
    assert (await client.delete(BASE, headers={"If-Match": etag})).status_code == 204
    assert (await client.get(BASE)).status_code == 404
    assert (await client.delete(BASE)).status_code == 404


async def test_another_tenants_record_is_not_found(client, tenant_client):
    await _put(client, scratchpad={"secret": "mine"})
    other = await tenant_client("other")
    assert (await other.get(BASE)).status_code == 404
    assert (await other.get(f"{BASE}/scratchpad/secret")).status_code == 404
    created = await other.put(BASE, json={})
    assert created.status_code == 201
    assert (await client.get(BASE)).json()["scratchpad"] == {"secret": "mine"}
