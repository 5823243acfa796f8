"""GET /v1/export under slow readers: the snapshot holds a database connection only while it
is read, and a tenant has at most `export.max_per_tenant` exports under way at once."""

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.core.config import ExportSettings
from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.services import api_keys
from tests.support.factories import store_episode

# Long enough that the export is sent in more than one piece.
LONG_TEXT = "Caroline kept a diary of the lighthouse keepers. " * 800


async def key_for(app: Any, tenant_id: str) -> str:
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        return (await api_keys.create_key(session, tenant_id=tenant_id)).secret


def client_for(app: Any, secret: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://t",
        headers={"X-API-Key": secret},
        timeout=60,
    )


@dataclass
class SlowReader:
    """An export whose reader takes its first piece and then reads nothing until let go."""

    task: asyncio.Task[None]
    let_go: asyncio.Event
    first_piece: asyncio.Event
    messages: list[dict[str, Any]] = field(default_factory=list)

    def status(self) -> int:
        return int(self.messages[0]["status"])

    def body(self) -> bytes:
        return b"".join(
            m.get("body", b"") for m in self.messages if m["type"] == "http.response.body"
        )


def slow_export(app: Any, secret: str) -> SlowReader:
    """Start GET /v1/export on the ASGI app with a client that stops reading."""
    let_go, first_piece = asyncio.Event(), asyncio.Event()
    messages: list[dict[str, Any]] = []
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await let_go.wait()
        await asyncio.sleep(3600)  # the client never leaves: the app ends the exchange
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)
        if message["type"] == "http.response.body" or message.get("status", 200) != 200:
            first_piece.set()
            await let_go.wait()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/v1/export",
        "raw_path": b"/v1/export",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"t"), (b"x-api-key", secret.encode())],
        "client": ("127.0.0.1", 5000),
        "server": ("t", 80),
    }
    task = asyncio.create_task(app(scope, receive, send))
    return SlowReader(task, let_go, first_piece, messages)


async def _first_piece(reader: SlowReader) -> None:
    await asyncio.wait_for(reader.first_piece.wait(), 60)
    assert reader.status() == 200, reader.messages


async def test_a_slow_export_reader_holds_no_database_connection(one_connection_app):
    app = one_connection_app
    secret, other = await key_for(app, "exporter"), await key_for(app, "neighbour")
    async with client_for(app, secret) as exporter, client_for(app, other) as neighbour:
        for i in range(3):
            await store_episode(exporter, f"{i} {LONG_TEXT}")
        whole = (await exporter.get("/v1/export")).content
        reader = slow_export(app, secret)
        try:
            await _first_piece(reader)
            # The export is partly read and its reader stalls; the one connection serves
            # another tenant meanwhile.
            listed = await asyncio.wait_for(neighbour.get("/v1/episodes"), 15)
            assert listed.status_code == 200
            assert len(reader.body()) < len(whole)
        finally:
            reader.let_go.set()
        await asyncio.wait_for(reader.task, 60)
    assert reader.body() == whole
    assert [json.loads(line)["kind"] for line in whole.splitlines()].count("episode") == 3


async def test_a_tenant_past_its_concurrent_exports_gets_429(one_connection_app):
    app = one_connection_app
    secret, other = await key_for(app, "busy"), await key_for(app, "calm")
    async with client_for(app, secret) as busy, client_for(app, other) as calm:
        await store_episode(busy, LONG_TEXT)
        reader = slow_export(app, secret)
        try:
            await _first_piece(reader)
            refused = await asyncio.wait_for(busy.get("/v1/export"), 15)
            assert refused.status_code == 429, refused.text
            assert refused.headers["content-type"] == "application/problem+json"
            assert int(refused.headers["Retry-After"]) >= 1
            assert "export" in refused.json()["detail"]
            # Another tenant's export is not held back.
            assert (await asyncio.wait_for(calm.get("/v1/export"), 15)).status_code == 200
        finally:
            reader.let_go.set()
        await asyncio.wait_for(reader.task, 60)
        # The slot is given back when the export ends.
        assert (await busy.get("/v1/export")).status_code == 200


async def test_a_snapshot_read_past_its_time_is_a_503_and_frees_its_slot(settings):
    app = create_app(
        settings.model_copy(
            update={
                "db_pool_size": 1,
                "db_max_overflow": 0,
                "export": ExportSettings(max_per_tenant=1, snapshot_seconds=0.001),
            }
        )
    )
    async with app.router.lifespan_context(app):
        async with client_for(app, await key_for(app, "hurried")) as hurried:
            await store_episode(hurried, LONG_TEXT)
            for _ in range(2):
                late = await hurried.get("/v1/export")
                assert late.status_code == 503, late.text
                assert late.headers["content-type"] == "application/problem+json"
                assert "export.snapshot_seconds" in late.json()["detail"]
                assert int(late.headers["Retry-After"]) >= 1
            # Its connection went back to the pool of one.
            assert (await hurried.get("/v1/episodes")).status_code == 200
            assert app.state.export_slots.held("hurried") == 0
