"""HTTP conventions every route keeps: Allow on 405, 415 for form bodies."""


async def test_wrong_method_answers_405_with_the_allowed_methods(client):
    response = await client.put("/v1/episodes")
    assert response.status_code == 405
    allowed = {method.strip() for method in response.headers["Allow"].split(",")}
    assert {"GET", "POST"} <= allowed
    assert "PUT" not in allowed


async def test_allow_names_the_literal_resource_not_a_templated_sibling(client):
    response = await client.put("/v1/episodes/batch")
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST"


async def test_form_encoded_body_is_415_naming_content_type(client, sql):
    response = await client.post("/v1/episodes", data={"content": "hello", "butler": "chat"})
    assert response.status_code == 415
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["errors"][0]["field"] == "Content-Type"
    [row] = await sql("SELECT count(*) AS n FROM episodes")
    assert row["n"] == 0


async def test_multipart_body_is_415(client):
    response = await client.post("/v1/facts", files={"content": ("a.txt", b"x")})
    assert response.status_code == 415


async def test_json_body_still_accepted_with_charset(client):
    response = await client.post(
        "/v1/episodes",
        content=b'{"content": "hello", "butler": "chat"}',
        headers={"Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 201


async def test_unknown_query_parameter_is_422_naming_it(client):
    response = await client.get("/v1/episodes", params={"limt": 5})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.limt"


async def test_declared_query_parameters_still_work(client):
    response = await client.get("/v1/episodes", params={"limit": 5})
    assert response.status_code == 200


# 201 routes whose created thing has no URL of its own, so their answer has no Location.
WITHOUT_LOCATION = {
    ("POST", "/v1/episodes/batch"): "many episodes, each listed in the body",
    ("POST", "/v1/links"): "links are read through the memories they join",
    ("POST", "/v1/ledgers/{ledger_name}/events"): "ledger events are read as a stream",
    (
        "POST",
        "/v1/ledgers/{ledger_name}/agents/{agent_id}/reflections",
    ): "reflections are read as a stream",
}


async def _created(client, method, path, body):
    response = await client.request(method, path, json=body)
    assert response.status_code == 201, (path, response.text)
    return response


async def _location_cases(client):
    """(route, response) of every create that answers with a Location."""
    run = (await _created(client, "POST", "/v1/runs", {"task_id": "t1"})).json()
    procedure = await _created(
        client,
        "POST",
        "/v1/procedures",
        {"agent_id": "a", "name": "greet", "steps": [{"step": 1, "action": "greet"}]},
    )
    procedure_id = procedure.json()["id"]
    return {
        ("POST", "/v1/episodes"): await _created(
            client, "POST", "/v1/episodes", {"butler": "chat", "content": "hello"}
        ),
        ("POST", "/v1/facts"): await _created(
            client,
            "POST",
            "/v1/facts",
            {"subject": "Ann", "predicate": "likes", "content": "Ann likes tea"},
        ),
        ("POST", "/v1/rules"): await _created(client, "POST", "/v1/rules", {"content": "Be brief"}),
        ("POST", "/v1/entities"): await _created(
            client, "POST", "/v1/entities", {"canonical_name": "Ann", "entity_type": "person"}
        ),
        ("POST", "/v1/runs"): await _created(client, "POST", "/v1/runs", {"task_id": "t2"}),
        ("POST", "/v1/runs/{run_id}/messages"): await _created(
            client, "POST", f"/v1/runs/{run['id']}/messages", {"role": "planner", "content": "plan"}
        ),
        ("POST", "/v1/runs/{run_id}/messages/batch"): await _created(
            client,
            "POST",
            f"/v1/runs/{run['id']}/messages/batch",
            {"items": [{"role": "executor", "content": "done"}]},
        ),
        ("POST", "/v1/runs/{run_id}/feedback"): await _created(
            client, "POST", f"/v1/runs/{run['id']}/feedback", {"source": "critic", "rating": 0.5}
        ),
        ("POST", "/v1/procedures"): procedure,
        ("POST", "/v1/procedures/{procedure_id}/versions"): await _created(
            client,
            "POST",
            f"/v1/procedures/{procedure_id}/versions",
            {"steps": [{"step": 1, "action": "wave"}]},
        ),
        ("POST", "/v1/arcs"): await _created(
            client, "POST", "/v1/arcs", {"title": "Launch", "arc_type": "incident"}
        ),
        ("PUT", "/v1/working-memory/{agent_id}/{session_id}"): await _created(
            client, "PUT", "/v1/working-memory/agent-1/session-1", {}
        ),
    }


async def test_every_create_answers_with_a_location_that_reads_it_back(client):
    cases = await _location_cases(client)
    paths = (await client.get("/openapi.json")).json()["paths"]
    creates = {
        (method.upper(), path)
        for path, operations in paths.items()
        for method, operation in operations.items()
        if "201" in operation["responses"]
    }
    assert creates == set(cases) | set(WITHOUT_LOCATION)
    for route, response in cases.items():
        location = response.headers.get("Location")
        assert location is not None, route
        read = await client.get(location)
        assert read.status_code == 200, (route, location, read.text)
        created_id = response.json().get("id")
        if "/runs/{run_id}/" not in route[1] and created_id is not None:
            assert read.json()["id"] == created_id, route


async def test_a_fact_that_only_confirms_has_no_location(client):
    fact = {"subject": "Bo", "predicate": "likes", "content": "Bo likes jazz"}
    await _created(client, "POST", "/v1/facts", fact)
    again = await client.post("/v1/facts", json=fact)
    assert again.status_code == 200 and "Location" not in again.headers


async def test_adding_to_an_unknown_run_is_404_without_a_location(client):
    missing = "/v1/runs/00000000-0000-4000-8000-000000000000"
    for path, body in [
        ("/messages", {"role": "planner", "content": "plan"}),
        ("/messages/batch", {"items": [{"role": "human", "content": "hi"}]}),
        ("/feedback", {"source": "critic", "rating": 0.5}),
    ]:
        response = await client.post(missing + path, json=body)
        assert response.status_code == 404, (path, response.text)
        assert "Location" not in response.headers, path


async def test_a_location_with_non_ascii_path_segments_is_percent_encoded(client):
    response = await client.put("/v1/working-memory/agent-ü/sessión-𝄞", json={})
    assert response.status_code == 201, response.text
    location = response.headers["Location"]
    assert location.isascii() and "%C3%BC" in location
    assert (await client.get(location)).status_code == 200
