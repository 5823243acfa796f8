"""Bulk facts: many read, stored or deleted in one request and one transaction, with a
result per item."""

from tests.support.factories import store_fact

MISSING = "00000000-0000-4000-8000-000000000000"


def _fact(subject: str, content: str, **fields) -> dict:
    return {"subject": subject, "predicate": "likes", "content": content, **fields}


async def _count(sql, table: str = "facts") -> int:
    [row] = await sql(f"SELECT count(*) AS n FROM {table}")
    return int(row["n"])


async def test_bulk_put_stores_in_order_with_a_result_per_item(client, sql):
    response = await client.post(
        "/v1/facts/bulk",
        json={
            "items": [
                _fact("Ann", "Ann likes tea", scope="home"),
                _fact("Bo", "Bo likes chess"),
                _fact("ann", "Ann likes coffee", scope="home"),
                _fact("Bo", "Bo likes chess"),
            ]
        },
    )
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [item["status"] for item in items] == [201, 201, 201, 200]
    first, bo, second, confirmed = (item["fact"] for item in items)
    assert second["supersedes_id"] == first["id"]
    assert confirmed["id"] == bo["id"]
    got = (await client.get(f"/v1/facts/{first['id']}")).json()
    assert got["validity"] == "superseded"
    active = (await client.get("/v1/facts", params={"scope": "home"})).json()["items"]
    assert [fact["content"] for fact in active] == ["Ann likes coffee"]
    events = await sql("SELECT event_type FROM memory_events ORDER BY created_at, id")
    assert sorted(e["event_type"] for e in events).count("fact_created") == 3


async def test_a_refused_item_fails_the_whole_request_and_names_its_field(client, sql):
    await store_fact(client, "Cy", "likes", "Cy likes jazz")
    before = await _count(sql)
    response = await client.post(
        "/v1/facts/bulk",
        json={
            "items": [
                _fact("Cy", "Cy likes blues"),
                _fact("Di", "Di likes maps"),
                _fact("Ed", "Ed likes rain", entity_id=MISSING),
            ]
        },
    )
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert [e["field"] for e in response.json()["errors"]] == ["body.items.2.entity_id"]
    assert await _count(sql) == before
    listed = (await client.get("/v1/facts", params={"subject": "Cy"})).json()["items"]
    assert [fact["content"] for fact in listed] == ["Cy likes jazz"]

    period = await client.post(
        "/v1/facts/bulk",
        json={
            "items": [
                _fact("Fay", "Fay likes snow"),
                _fact(
                    "Gus",
                    "Gus likes sand",
                    valid_from="2026-01-02T00:00:00Z",
                    valid_until="2026-01-01T00:00:00Z",
                ),
            ]
        },
    )
    assert period.status_code == 422
    assert period.json()["errors"][0]["field"] == "body.items.1.valid_until"
    assert await _count(sql) == before


async def test_an_invalid_item_is_422_naming_it_before_anything_runs(client, sql):
    response = await client.post(
        "/v1/facts/bulk", json={"items": [_fact("Hal", "fine"), _fact("Ida", "\u200b")]}
    )
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["body.items.1.content"]
    assert await _count(sql) == 0


async def test_more_than_100_facts_to_store_or_1000_refs_or_none_is_422(client):
    for items in ([_fact(f"s{n}", "c") for n in range(101)], []):
        response = await client.post("/v1/facts/bulk", json={"items": items})
        assert response.status_code == 422
        assert [e["field"] for e in response.json()["errors"]] == ["body.items"]
    refs = [{"id": MISSING}] * 1001
    for path in ("/v1/facts/bulk/get", "/v1/facts/bulk/delete"):
        response = await client.post(path, json={"items": refs})
        assert response.status_code == 422
        assert [e["field"] for e in response.json()["errors"]] == ["body.items"]


async def test_a_body_over_the_byte_limit_is_413(client, settings, sql):
    size = 50_000
    items = [_fact(f"s{n}", "x" * size) for n in range(settings.max_body_bytes // size + 1)]
    response = await client.post("/v1/facts/bulk", json={"items": items})
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert await _count(sql) == 0


async def test_bulk_get_by_id_and_by_key_in_the_order_asked(client):
    tea = await store_fact(client, "Ann", "likes", "Ann likes tea", scope="home")
    old = await store_fact(client, "Bo", "likes", "Bo likes chess")
    new = await store_fact(client, "Bo", "likes", "Bo likes go")
    response = await client.post(
        "/v1/facts/bulk/get",
        json={
            "items": [
                {"subject": "BO", "predicate": " Likes"},
                {"id": tea["id"]},
                {"id": MISSING},
                {"scope": "home", "subject": "ann", "predicate": "likes"},
                {"subject": "Ann", "predicate": "likes"},
                {"id": old["id"]},
            ]
        },
    )
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [item["status"] for item in items] == [200, 200, 404, 200, 404, 200]
    assert [(item["fact"] or {}).get("id") for item in items] == [
        new["id"],
        tea["id"],
        None,
        tea["id"],
        None,
        old["id"],
    ]
    assert MISSING in items[2]["detail"]
    assert "'global'" in items[4]["detail"]


async def test_a_reference_needs_an_id_or_a_key_not_both(client):
    for ref in (
        {},
        {"subject": "Ann"},
        {"id": MISSING, "subject": "a", "predicate": "b"},
        {"scope": "home"},
    ):
        response = await client.post("/v1/facts/bulk/get", json={"items": [{"id": MISSING}, ref]})
        assert response.status_code == 422, ref
        assert [e["field"] for e in response.json()["errors"]] == ["body.items.1"], ref


async def test_bulk_delete_removes_each_fact_with_its_history(client, sql):
    old = await store_fact(client, "Ann", "likes", "Ann likes tea")
    new = await store_fact(client, "Ann", "likes", "Ann likes coffee")
    bo = await store_fact(client, "Bo", "likes", "Bo likes chess", scope="club")
    kept = await store_fact(client, "Cy", "likes", "Cy likes jazz")
    response = await client.post(
        "/v1/facts/bulk/delete",
        json={
            "items": [
                {"subject": "ann", "predicate": "likes"},
                {"id": MISSING},
                {"id": bo["id"]},
                {"id": old["id"]},
            ]
        },
    )
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [item["status"] for item in items] == [204, 404, 204, 204]
    assert items[0]["id"] == new["id"]
    assert sorted(items[0]["deleted_ids"]) == sorted([old["id"], new["id"]])
    assert items[2]["deleted_ids"] == [bo["id"]]
    assert MISSING in items[1]["detail"]
    remaining = await sql("SELECT id::text AS id FROM facts")
    assert [row["id"] for row in remaining] == [kept["id"]]
    events = await sql("SELECT payload FROM memory_events WHERE event_type = 'fact_deleted'")
    assert sorted(e["payload"]["memory_id"] for e in events) == sorted([new["id"], bo["id"]])
    again = await client.post("/v1/facts/bulk/delete", json={"items": [{"id": bo["id"]}]})
    assert again.json()["items"][0]["status"] == 404
