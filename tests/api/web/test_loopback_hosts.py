"""With authentication disabled, only requests addressed to a loopback name are served, so a
web page whose name is rebound to 127.0.0.1 cannot read or change the default tenant."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.main import create_app


@pytest.fixture(scope="module")
async def open_app(settings: Any) -> AsyncIterator[Any]:
    loopback = settings.model_copy(update={"host": "127.0.0.1", "auth_disabled": True})
    app = create_app(loopback)
    async with app.router.lifespan_context(app):
        yield app


async def get(app: Any, base_url: str, path: str = "/v1/facts", **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url) as http:
        return await http.get(path, headers=headers)


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://LOCALHOST",
        "http://[::1]:8000",
        "http://127.0.0.1",
    ],
)
async def test_loopback_names_are_served(open_app, base_url):
    assert (await get(open_app, base_url)).status_code == 200


@pytest.mark.parametrize("path", ["/v1/facts", "/ui", "/mcp", "/healthz", "/metrics"])
async def test_another_host_name_is_refused_as_misdirected(open_app, path):
    refused = await get(open_app, "http://rebound.example:8000", path)
    assert refused.status_code == 421
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["errors"][0]["field"] == "Host"


@pytest.mark.parametrize(
    "host", ["127.0.0.1.rebound.example", "localhost.example:8000", "[::2]:8000", "10.0.0.1:8000"]
)
async def test_names_that_only_look_like_loopback_are_refused(open_app, host):
    assert (await get(open_app, "http://127.0.0.1:8000", Host=host)).status_code == 421


async def test_a_page_of_another_origin_is_refused(open_app):
    refused = await get(open_app, "http://127.0.0.1:8000", Origin="http://rebound.example")
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["field"] == "Origin"
    served = await get(open_app, "http://127.0.0.1:8000", Origin="http://localhost:8000")
    assert served.status_code == 200


async def test_with_authentication_on_any_host_name_is_served(client):
    assert (
        await client.get("/v1/facts", headers={"Host": "engram.example.com"})
    ).status_code == 200
