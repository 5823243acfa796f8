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
        "/v1/episodes", content=b'{"content": "hello", "butler": "chat"}',
        headers={"Content-Type": "application/json; charset=utf-8"})
    assert response.status_code == 201


async def test_unknown_query_parameter_is_422_naming_it(client):
    response = await client.get("/v1/episodes", params={"limt": 5})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "query.limt"


async def test_declared_query_parameters_still_work(client):
    response = await client.get("/v1/episodes", params={"limit": 5})
    assert response.status_code == 200
