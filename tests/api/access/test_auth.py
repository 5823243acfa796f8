"""API keys: every /v1 route needs a live key; the tenant comes from the key alone."""

import logging
import re
import uuid

import httpx
import pytest
from sqlalchemy import text

from app.cli import main as cli
from app.core.config import Settings
from app.core.errors import StartupRefused
from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.services import api_keys

PUBLIC_PATHS = {"/healthz", "/readyz", "/docs", "/openapi.json", "/docs/oauth2-redirect", "/redoc"}


def v1_operations(app) -> list[tuple[str, str]]:
    """(method, concrete path) for every documented /v1 operation, path parameters filled in."""
    operations = []
    for template, methods in app.openapi()["paths"].items():
        if not template.startswith("/v1/"):
            continue
        path = re.sub(r"\{(memory_type|node_type)\}", "fact", template)
        path = re.sub(r"\{[^}]+\}", str(uuid.uuid4()), path)
        operations += [(method.upper(), path) for method in sorted(methods)]
    return operations


async def test_every_v1_route_without_a_key_is_401(app, anonymous_client):
    operations = v1_operations(app)
    assert len(operations) > 20
    for method, path in operations:
        response = await anonymous_client.request(method, path, json={})
        assert response.status_code == 401, f"{method} {path}: {response.status_code}"
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"].startswith("Bearer")


async def test_every_v1_route_with_a_revoked_key_is_401(app, anonymous_client, sql):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id="default")
    await sql("UPDATE api_keys SET revoked_at = now() WHERE id = :id", id=minted.record.id)
    headers = {"Authorization": f"Bearer {minted.secret}"}
    for method, path in v1_operations(app):
        response = await anonymous_client.request(method, path, json={}, headers=headers)
        assert response.status_code == 401, f"{method} {path}"


async def test_unknown_key_is_401(anonymous_client):
    response = await anonymous_client.get(
        "/v1/facts", headers={"Authorization": "Bearer egk_made_up"}
    )
    assert response.status_code == 401
    assert "unknown or revoked" in response.json()["detail"]


async def test_x_api_key_header_is_accepted(app, anonymous_client):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id="default")
    response = await anonymous_client.get("/v1/facts", headers={"X-API-Key": minted.secret})
    assert response.status_code == 200


async def test_health_and_docs_need_no_key(anonymous_client):
    for path in ("/healthz", "/readyz", "/docs", "/openapi.json"):
        response = await anonymous_client.get(path)
        assert response.status_code == 200, path


async def test_keys_are_stored_only_as_hashes(app, sql):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id="acme", name="ci")
    rows = await sql("SELECT * FROM api_keys")
    stored = " ".join(str(value) for row in rows for value in row.values())
    assert minted.secret not in stored
    assert rows[0]["key_hash"] == api_keys.hash_key(minted.secret)


async def test_tenant_comes_from_the_key_not_the_request(app, anonymous_client):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        acme = await api_keys.create_key(session, tenant_id="acme")
    headers = {"Authorization": f"Bearer {acme.secret}"}
    switch = await anonymous_client.post(
        "/v1/rules?tenant_id=default", headers=headers, json={"content": "Greet in Dutch"}
    )
    assert switch.status_code == 422  # unknown query parameter, not a tenant switch
    assert switch.json()["errors"][0]["field"] == "query.tenant_id"
    created = await anonymous_client.post(
        "/v1/rules", headers=headers, json={"content": "Greet in Dutch"}
    )
    assert created.status_code == 201
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        owner = (
            await session.execute(
                text("SELECT tenant_id FROM rules WHERE id = :id"),
                {"id": uuid.UUID(created.json()["id"])},
            )
        ).scalar_one()
    assert owner == "acme"
    other = await anonymous_client.post(
        "/v1/rules", json={"content": "x", "tenant_id": "default"}, headers=headers
    )
    assert other.status_code == 422  # unknown field, not a tenant switch


def test_cli_creates_lists_and_revokes_keys(database_url, capsys, monkeypatch, leaves_no_rows):
    monkeypatch.setenv("DATABASE_URL", database_url)
    cli(["keys", "create", "--tenant", "acme", "--name", "laptop"])
    created = capsys.readouterr()
    secret = created.out.strip()  # the key alone on stdout; the rest on stderr
    key_id = re.search(r"id:\s+(\S+)", created.err).group(1)
    assert secret.startswith("egk_")
    cli(["keys", "list", "--tenant", "acme"])
    listing = capsys.readouterr().out
    assert key_id in listing and "live" in listing and secret not in listing
    cli(["keys", "revoke", key_id])
    cli(["keys", "list", "--tenant", "acme"])
    assert "revoked" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli(["keys", "create", "--tenant", "bad tenant!"])


async def _start(settings: Settings) -> None:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        pass


async def test_auth_disabled_on_a_public_address_refuses_to_start(settings):
    public = settings.model_copy(update={"host": "0.0.0.0", "auth_disabled": True})
    with pytest.raises(StartupRefused, match="loopback"):
        await _start(public)


async def test_public_address_without_keys_refuses_to_start(settings, sql):
    await sql("DELETE FROM api_keys")
    public = settings.model_copy(update={"host": "0.0.0.0"})
    with pytest.raises(StartupRefused, match="engram keys create"):
        await _start(public)


async def test_public_address_with_a_key_starts(app, settings):
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        await api_keys.create_key(session, tenant_id="acme")
    await _start(settings.model_copy(update={"host": "0.0.0.0"}))


async def test_auth_disabled_on_loopback_says_so(settings, caplog, leaves_no_rows):
    loopback = settings.model_copy(update={"host": "127.0.0.1", "auth_disabled": True})
    app = create_app(loopback)
    with caplog.at_level(logging.WARNING):
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                ready = (await http.get("/readyz")).json()
                facts = await http.get("/v1/facts")
    assert ready["auth"] == "disabled"
    assert facts.status_code == 200
    assert any("AUTHENTICATION IS DISABLED" in record.getMessage() for record in caplog.records)
