"""Export as JSON Lines and import back: ids, times, histories and counters survive."""

import json
import uuid

import pytest

from tests.support.factories import create_entity, store_episode, store_fact
from tests.support.http import post
from tests.support.rights import erase, plant

NDJSON = {"Content-Type": "application/x-ndjson"}


def _records(body: str) -> list[dict]:
    return sorted(
        (json.loads(line) for line in body.splitlines()),
        key=lambda r: (r["kind"], json.dumps(r, sort_keys=True)),
    )


async def test_export_erase_import_gives_back_equal_data(app, settings, client):
    ids = await plant(client)
    await store_episode(client, "an old memory", occurred_at="2020-05-01T12:00:00+00:00")
    exported = await client.get("/v1/export")
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    before = _records(exported.text)

    await erase(client, app, settings, tenant=True, confirm="default")
    assert _records((await client.get("/v1/export")).text) == []
    imported = await client.post("/v1/import", content=exported.content, headers=NDJSON)

    assert imported.status_code == 200, imported.text
    assert imported.json()["imported"] == {
        "entity": 2,
        "episode": 2,
        "fact": 2,
        "fact_period": 3,
        "rule": 1,
        "rule_application": 1,
        "run": 0,
        "run_message": 0,
        "run_feedback": 0,
        "agent_event": 0,
        "reflection_consolidation": 0,
        "procedure": 0,
        "arc": 0,
        "working_memory": 0,
        "link": 2,
    }
    assert _records((await client.get("/v1/export")).text) == before
    history = (await client.get(f"/v1/facts/{ids['new']}/history")).json()
    assert [fact["id"] for fact in history] == [ids["new"], ids["old"]]
    hits = (
        await client.post("/v1/search", json={"query": "phone mobile", "mode": "semantic"})
    ).json()
    assert ids["new"] in json.dumps(hits)


async def test_export_holds_every_kind_and_no_embeddings(client):
    await plant(client)
    records = _records((await client.get("/v1/export")).text)
    assert {r["kind"] for r in records} == {
        "entity",
        "episode",
        "fact",
        "fact_period",
        "rule",
        "rule_application",
        "link",
    }
    assert not [r for r in records if "embedding" in r or "search_vector" in r]
    [rule] = [r for r in records if r["kind"] == "rule"]
    assert (rule["applied_count"], rule["harmful_count"]) == (1, 1)


def _episode_line(tenant_id: str = "default") -> str:
    return json.dumps(
        {
            "kind": "episode",
            "id": str(uuid.uuid4()),
            "tenant_id": tenant_id,
            "butler": "chat",
            "content": "hello",
            "created_at": "2021-01-01T00:00:00+00:00",
        }
    )


async def test_a_line_of_another_tenant_is_refused_and_nothing_is_imported(client):
    body = _episode_line() + "\n" + _episode_line("someone-else") + "\n"

    response = await client.post("/v1/import", content=body, headers=NDJSON)

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["errors"][0]["field"] == "line 2.tenant_id"
    assert (await client.get("/v1/episodes")).json()["items"] == []


async def test_an_import_holds_at_most_max_import_records(app, client, monkeypatch):
    monkeypatch.setattr(app.state.settings, "max_import_records", 2)
    three = "\n".join(_episode_line() for _ in range(3))

    response = await client.post("/v1/import", content=three, headers=NDJSON)

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["errors"][0]["field"] == "body"
    assert "at most 2 records" in response.json()["detail"]
    assert (await client.get("/v1/episodes")).json()["items"] == []
    two = "\n".join(_episode_line() for _ in range(2)) + "\n\n"
    assert (await client.post("/v1/import", content=two, headers=NDJSON)).status_code == 200


async def test_imported_times_are_the_originals(client):
    response = await client.post("/v1/import", content=_episode_line(), headers=NDJSON)
    assert response.status_code == 200, response.text
    [episode] = (await client.get("/v1/episodes", params={"include_expired": True})).json()["items"]
    assert episode["created_at"].startswith("2021-01-01T00:00:00")


async def test_a_record_pointing_at_another_tenants_rows_is_refused(tenant_client):
    owner = await tenant_client("owner")
    intruder = await tenant_client("intruder")
    theirs = await store_episode(owner, "private")
    line = json.dumps(
        {
            "kind": "fact",
            "id": str(uuid.uuid4()),
            "subject": "x",
            "predicate": "y",
            "subject_key": "x",
            "predicate_key": "y",
            "content": "z",
            "source_episode_id": theirs["id"],
        }
    )

    response = await intruder.post("/v1/import", content=line, headers=NDJSON)

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "fact.source_episode_id"


async def test_malformed_lines_are_422_naming_line_and_field(client):
    cases = {
        "": "body",
        "\n \n": "body",
        "not json": "line 1.line",
        json.dumps({"kind": "planet", "id": str(uuid.uuid4())}): "line 1.kind",
        json.dumps(
            {
                "kind": "episode",
                "id": str(uuid.uuid4()),
                "butler": "b",
                "content": "c",
                "colour": "red",
            }
        ): "line 1.colour",
        json.dumps(
            {"kind": "episode", "id": str(uuid.uuid4()), "butler": "b", "content": 5}
        ): "line 1.content",
        json.dumps({"kind": "episode", "id": "nope", "butler": "b", "content": "c"}): "line 1.id",
        json.dumps(
            {
                "kind": "episode",
                "id": str(uuid.uuid4()),
                "butler": "b",
                "content": "c",
                "created_at": "yesterday",
            }
        ): "line 1.created_at",
        json.dumps({"kind": "episode", "id": str(uuid.uuid4()), "butler": "b"}): "line 1.content",
    }
    for body, field in cases.items():
        response = await client.post("/v1/import", content=body, headers=NDJSON)
        assert response.status_code == 422, (body, response.text)
        assert response.json()["errors"][0]["field"] == field, body


async def test_values_the_database_cannot_hold_are_422_not_500(client):
    base = {
        "kind": "fact",
        "id": str(uuid.uuid4()),
        "subject": "x",
        "predicate": "y",
        "subject_key": "x",
        "predicate_key": "y",
        "content": "z",
    }
    cases = [
        (json.dumps(base)[:-1] + ', "confidence": NaN}', "confidence"),
        (json.dumps({**base, "reference_count": 2**40}), "reference_count"),
        (json.dumps({**base, "content": "x" * 50_001}), "content"),
        (json.dumps({**base, "content": "\ud800"}), "content"),
        (json.dumps({**base, "content": "a\u0000b"}), "content"),
    ]
    for body, field in cases:
        response = await client.post("/v1/import", content=body, headers=NDJSON)
        assert response.status_code == 422, (field, response.text)
        assert response.json()["errors"][0]["field"] == f"line 1.{field}"


async def test_broken_constraints_name_the_kind_and_column(client):
    fact = {
        "kind": "fact",
        "id": str(uuid.uuid4()),
        "subject": "x",
        "predicate": "y",
        "subject_key": "x",
        "predicate_key": "y",
        "content": "z",
    }
    bad_validity = json.dumps({**fact, "validity": "bogus"})
    missing_entity = json.dumps({**fact, "entity_id": str(uuid.uuid4())})
    twice = json.dumps(fact) + "\n" + json.dumps(fact)

    for body, status, field in (
        (bad_validity, 422, "fact.validity"),
        (missing_entity, 422, "fact.entity_id"),
        (twice, 409, "fact.id"),
    ):
        response = await client.post("/v1/import", content=body, headers=NDJSON)
        assert response.status_code == status, (field, response.text)
        assert response.json()["errors"][0]["field"] == field


async def _session_index(sql):
    """(content, tsvector, context passage vector or None) of every episode, in order."""
    rows = await sql(
        "SELECT e.content, e.search_vector::text AS words, p.embedding::text AS "
        "context FROM episodes e LEFT JOIN passages p ON p.episode_id = e.id "
        "AND p.kind = 'context' ORDER BY e.sequence"
    )
    return [
        (row["content"], row["words"], json.loads(row["context"]) if row["context"] else None)
        for row in rows
    ]


@pytest.mark.parametrize("session", ["sent", "inferred"])
async def test_imported_turns_are_indexed_as_when_they_were_stored(
    app, settings, client, sql, monkeypatch, inferred_sessions, session
):
    monkeypatch.setattr(app.state.settings, "keyword_context", True)
    turns = [
        "Caroline: we adopted a grey kitten from the shelter last week.",
        "Melanie: how is she settling in?",
        "Caroline: she sleeps on the porch all day.",
        "Melanie: lucky cat!",
    ]
    for turn in turns:
        await store_episode(
            client, turn, butler="chat", **({"session_id": "s1"} if session == "sent" else {})
        )
    stored = await _session_index(sql)
    exported = await client.get("/v1/export")
    await erase(client, app, settings, tenant=True, confirm="default")

    imported = await client.post("/v1/import", content=exported.content, headers=NDJSON)

    assert imported.status_code == 200, imported.text
    again = await _session_index(sql)
    assert [(content, words) for content, words, _ in again] == [
        (content, words) for content, words, _ in stored
    ]
    assert [context is None for *_, context in again] == [True, False, False, False]
    for (*_, before), (*_, after) in zip(stored[1:], again[1:], strict=True):
        assert sum(a * b for a, b in zip(before, after, strict=True)) > 0.9999


async def test_a_tenant_with_entity_relations_imports_its_own_export(app, settings, client):
    ann = await create_entity(client, "Ann Example")
    acme = await create_entity(client, "Acme", entity_type="organization")
    bob = await create_entity(client, "Bob Example")
    for source, target, relation in ((ann, acme, "works_at"), (ann, bob, "knows")):
        await post(
            client,
            "/v1/links",
            source_type="entity",
            source_id=source["id"],
            target_type="entity",
            target_id=target["id"],
            relation=relation,
            strength=0.5,
        )
    exported = await client.get("/v1/export")
    await erase(client, app, settings, tenant=True, confirm="default")

    imported = await client.post("/v1/import", content=exported.content, headers=NDJSON)

    assert imported.status_code == 200, imported.text
    assert imported.json()["imported"]["link"] == 2
    assert _records((await client.get("/v1/export")).text) == _records(exported.text)


async def test_a_link_to_another_tenants_entity_is_refused(tenant_client):
    owner = await tenant_client("owner")
    intruder = await tenant_client("intruder")
    theirs = await create_entity(owner, "Private Person")
    mine = await create_entity(intruder, "Me")
    line = json.dumps(
        {
            "kind": "link",
            "source_type": "entity",
            "source_id": mine["id"],
            "target_type": "entity",
            "target_id": theirs["id"],
            "relation": "knows",
            "created_at": "2021-01-01T00:00:00+00:00",
        }
    )

    response = await intruder.post("/v1/import", content=line, headers=NDJSON)

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "link"


async def test_a_message_of_another_tenants_run_is_refused(tenant_client):
    owner = await tenant_client("owner")
    intruder = await tenant_client("intruder")
    theirs = await post(owner, "/v1/runs", task_id="private-task")
    line = json.dumps(
        {
            "kind": "run_message",
            "id": str(uuid.uuid4()),
            "run_id": theirs["id"],
            "role": "human",
            "content": "hello",
            "token_count": 1,
        }
    )

    response = await intruder.post("/v1/import", content=line, headers=NDJSON)

    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "run_message.run_id"
    assert (await owner.get(f"/v1/runs/{theirs['id']}")).json()["messages"] == []


async def test_what_was_learned_keeps_its_origins_through_export_and_import(app, settings, client):
    episode = await store_episode(
        client, "Ann said: call me on 5550199", butler="chat", session_id="s-moved"
    )
    fact = await store_fact(
        client, subject="Ann", predicate="phone", content="Ann's phone is 5550199"
    )
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=fact["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )
    assert (await client.delete(f"/v1/episodes/{episode['id']}")).status_code == 204
    exported = (await client.get("/v1/export")).text
    [line] = [r for r in _records(exported) if r["kind"] == "fact"]
    assert line["origins"] == ["butler:chat", "session:s-moved"]

    await erase(client, app, settings, tenant=True, confirm="default")
    imported = await client.post("/v1/import", content=exported.encode(), headers=NDJSON)
    assert imported.status_code == 200, imported.text
    assert _records((await client.get("/v1/export")).text) == _records(exported)

    job = await erase(client, app, settings, session_id="s-moved")
    assert job["result"]["deleted"]["facts"] == 1
    assert (await client.get(f"/v1/facts/{fact['id']}")).status_code == 404


def _nested(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


async def test_imported_metadata_nests_no_deeper_than_a_stored_memorys(client):
    within = json.loads(_episode_line())
    within["metadata"] = _nested(8)
    deeper = json.loads(_episode_line())
    deeper["metadata"] = _nested(9)
    stored = await client.post(
        "/v1/episodes", json={"content": "x", "butler": "chat", "metadata": _nested(9)}
    )
    assert stored.status_code == 422

    response = await client.post(
        "/v1/import", headers=NDJSON, content=json.dumps(within) + "\n" + json.dumps(deeper)
    )

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["errors"][0]["field"] == "line 2.metadata"
    assert "nest" in response.json()["detail"]
    assert (await client.get("/v1/episodes")).json()["items"] == []
    accepted = await client.post("/v1/import", content=json.dumps(within), headers=NDJSON)
    assert accepted.status_code == 200, accepted.text
