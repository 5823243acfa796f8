"""Signing in to the web console over HTTP and reading its forms' CSRF tokens."""

import re
from typing import Any

import httpx

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
SIGN_IN_CSRF = re.compile(r'name="csrf_sign_in" value="([^"]+)"')


def csrf_of(html: str) -> str:
    """The CSRF token of the first change form on a page."""
    found = CSRF.search(html)
    assert found, "no CSRF field on the page"
    return found.group(1)


async def sign_in(http: httpx.AsyncClient, secret: str) -> httpx.Response:
    """Fill the sign-in form at /ui with `secret`; the answer (303 on success)."""
    form = await http.get("/ui")
    assert form.status_code == 200, form.text
    found = SIGN_IN_CSRF.search(form.text)
    assert found, "no sign-in form"
    return await http.post(
        "/ui/sign-in", data={"csrf_sign_in": found.group(1), "api_key": secret, "next": "/ui"}
    )


async def console_client(app: Any, secret: str) -> httpx.AsyncClient:
    """An in-process browser-like client signed in with `secret` (cookies kept)."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://engram.test")
    answer = await sign_in(http, secret)
    assert answer.status_code == 303, answer.text
    return http


async def post_form(http: httpx.AsyncClient, page: str, verb: str, **fields: str) -> httpx.Response:
    """Open `page`, then post its `verb` form with the page's CSRF token and `fields`."""
    html = (await http.get(page)).text
    return await http.post(f"{page}/{verb}", data={"csrf_token": csrf_of(html), **fields})


async def overview_of(app: Any, tenant_id: str = "default") -> str:
    """The console's overview page as a reader of `tenant_id` sees it."""
    from app.core.scope import SYSTEM, scoped_transaction
    from app.services import api_keys

    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        key = await api_keys.create_key(session, tenant_id=tenant_id, access="read")
    http = await console_client(app, key.secret)
    try:
        return (await http.get("/ui")).text
    finally:
        await http.aclose()
