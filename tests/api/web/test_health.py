"""Liveness, readiness and the shape of errors on unknown routes."""

from tests.support.waiting import until


async def test_healthz_answers_ok(client):
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_reports_database_migrations_and_model(client):
    response = await client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "database": True,
        "migrations_at_head": True,
        "embedding_model": True,
        "auth": "required",
        "embedding_backlog": None,
        "replicas": [],
    }


async def test_readyz_is_503_when_schema_is_behind(client, sql):
    [row] = await sql("SELECT version_num FROM alembic_version")
    await sql("UPDATE alembic_version SET version_num = 'mem_001'")
    try:
        response = await client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["migrations_at_head"] is False
        assert response.json()["status"] == "not_ready"
    finally:
        await sql("UPDATE alembic_version SET version_num = :v", v=row["version_num"])


async def test_unknown_route_is_404_problem(client):
    response = await client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["title"] == "Not Found"


async def test_wrong_method_is_405_problem(client):
    response = await client.delete("/v1/facts")
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"


async def test_malformed_json_is_422_problem(client):
    response = await client.post(
        "/v1/facts", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["errors"][0]["field"].startswith("body")


async def test_wrong_json_type_is_422(client):
    response = await client.post("/v1/rules", json=["a", "list"])
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body"


async def test_metadata_with_nul_or_too_deep_is_rejected(client):
    deep: dict = {}
    node = deep
    for _ in range(10):
        node["k"] = {}
        node = node["k"]
    for metadata in (deep, {"blob": "x" * 20_000}):
        response = await client.post("/v1/rules", json={"content": "be kind", "metadata": metadata})
        assert response.status_code == 422, metadata
        assert response.json()["errors"][0]["field"] == "body.metadata"


async def test_nul_in_a_body_or_query_is_422_before_storage(client, sql):
    response = await client.post(
        "/v1/rules", json={"content": "be kind", "metadata": {"note": "a\u0000b"}}
    )
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.metadata"
    listed = await client.get("/v1/facts", params={"subject": "a\x00b"})
    assert listed.status_code == 422
    assert listed.json()["errors"][0]["field"] == "query"
    [row] = await sql("SELECT count(*) AS n FROM rules")
    assert row["n"] == 0


async def test_body_over_the_limit_is_413(client, settings):
    blob = "x" * (settings.max_body_bytes + 1)
    response = await client.post(
        "/v1/rules", content=blob.encode(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"


async def test_freed_heap_goes_back_to_the_os_after_a_large_body_only(client, monkeypatch):
    import app.telemetry.heap
    import app.web.middleware

    released: list[str] = []
    monkeypatch.setattr(app.web.middleware, "release_free_memory", lambda: released.append("now"))
    monkeypatch.setattr(app.telemetry.heap, "release_free_memory", lambda: released.append("later"))
    monkeypatch.setattr(app.web.middleware, "RELEASE_AGAIN_AFTER_SECONDS", 0.05)
    monkeypatch.setattr(app.telemetry.heap, "_next_release_at", 0.0)
    small = await client.post("/v1/episodes", json={"content": "x" * 50_001})
    assert small.status_code == 422
    assert released == []
    large = await client.post(
        "/v1/episodes/batch", json={"items": [{"content": "x" * 50_001} for _ in range(21)]}
    )
    assert large.status_code == 422
    assert released == ["now"]
    # What the answer held is trimmed once more, a moment later.
    await until(lambda: len(released) > 1, timeout=10)
    assert released == ["now", "later"]
