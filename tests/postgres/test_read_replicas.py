"""Reads served by a real streaming hot standby: a primary and a standby made with the
embedded PostgreSQL's initdb, pg_basebackup and pg_ctl on private Unix sockets, and Engram
pointed at both (ENGRAM_REPLICA_DATABASE_URLS)."""

import asyncio
import inspect
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import JobSettings, ReplicaSettings, Settings
from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.repositories import embedding_switches as switch_rows
from app.services import api_keys
from tests.support.clusters import Cluster, create_database, new_primary, new_standby, private_dir

pytestmark = pytest.mark.timeout(600)

TENANT = "replicated"


@pytest.fixture(scope="module")
async def servers() -> AsyncIterator[tuple[Cluster, Cluster]]:
    """A primary with database `engram` and its streaming standby."""
    base = private_dir("eg-")
    primary = await asyncio.to_thread(new_primary, base)
    standby: Cluster | None = None
    try:
        await create_database(primary, "engram")
        standby = await asyncio.to_thread(new_standby, primary, base)
        yield primary, standby
    finally:
        for cluster in (standby, primary):
            if cluster is not None:
                await asyncio.to_thread(cluster.stop, "immediate")


@pytest.fixture(scope="module")
async def replicated_app(
    servers: tuple[Cluster, Cluster], tmp_path_factory: Any
) -> AsyncIterator[Any]:
    """Engram on the primary, reading from the standby."""
    primary, standby = servers
    settings = Settings(
        database_url=primary.url(database="engram"),
        replica_database_urls=[standby.url(database="engram")],
        replicas=ReplicaSettings(
            check_seconds=0.2, max_lag_seconds=300, reference_flush_seconds=0.2
        ),
        data_dir=tmp_path_factory.mktemp("engram"),
        db_pool_size=4,
        jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        # The start-up check can run before the standby has replayed the migrations (the
        # app's role does not exist there yet); the watch marks it up once it has.
        await until(
            lambda: all(r["state"] == "up" for r in application.state.replicas.status()),
            "the standby was never marked up",
        )
        yield application


@pytest.fixture
async def key_client(replicated_app: Any) -> AsyncIterator[Callable[[], Awaitable[Any]]]:
    """Make clients, each with an API key of its own for one tenant."""
    clients: list[httpx.AsyncClient] = []

    async def make() -> httpx.AsyncClient:
        async with scoped_transaction(replicated_app.state.sessionmaker, SYSTEM) as session:
            minted = await api_keys.create_key(session, tenant_id=TENANT)
        http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=replicated_app),
            base_url="http://engram.test",
            timeout=60,
            headers={"Authorization": f"Bearer {minted.secret}"},
        )
        clients.append(http)
        return http

    yield make
    for http in clients:
        await http.aclose()


def standby_name(app: Any) -> str:
    name: str = app.state.replicas.replicas[0].name
    return name


def reads_on(server: str) -> float:
    """Read transactions served by `server` so far (this process)."""
    return REGISTRY.get_sample_value("engram_read_transactions_total", {"server": server}) or 0.0


async def on(cluster: Cluster, statement: str, *args: Any) -> Any:
    connection = await asyncpg.connect(cluster.url(database="engram"))
    try:
        return await connection.fetchval(statement, *args)
    finally:
        await connection.close()


async def until(condition: Callable[[], Any], message: str, seconds: float = 30) -> None:
    """Poll `condition` (a value, or an awaitable of one) until it is true; fail with
    `message` after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return
        assert time.monotonic() < deadline, message
        await asyncio.sleep(0.05)


async def caught_up(primary: Cluster, standby: Cluster) -> None:
    """Wait until the standby has replayed everything the primary has written."""
    target = await on(primary, "SELECT pg_current_wal_lsn()::text")
    await until(
        lambda: on(standby, "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn", target),
        "the standby did not catch up",
    )


async def found(http: httpx.AsyncClient, query: str) -> list[str]:
    """Contents of the keyword search hits for `query` (the request must succeed)."""
    response = await http.post("/v1/search", json={"query": query, "mode": "keyword"})
    assert response.status_code == 200, response.text
    return [hit["content"] for hit in response.json()["results"]]


async def store_fact(http: httpx.AsyncClient, content: str) -> dict[str, Any]:
    response = await http.post(
        "/v1/facts", json={"subject": "probe", "predicate": "says", "content": content}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_write_is_found_by_a_search_the_standby_serves(replicated_app, servers, key_client):
    primary, standby = servers
    writer, reader = await key_client(), await key_client()
    await store_fact(writer, "Zebras migrate across the Serengeti in July")
    served = reads_on(standby_name(replicated_app))
    await until(lambda: found(reader, "zebras serengeti"), "the standby never served the write")
    assert reads_on(standby_name(replicated_app)) > served
    # With replay paused the standby cannot know a new write: the other key's search does not
    # find it, so it was served by the standby; the writing key's own search finds it.
    await on(standby, "SELECT pg_wal_replay_pause()")
    try:
        await store_fact(writer, "Penguins nest on the ice in October")
        assert await found(reader, "penguins nest") == []
        assert await found(writer, "penguins nest") == ["Penguins nest on the ice in October"]
        assert await on(primary, "SELECT count(*) FROM facts WHERE content LIKE 'Penguins%'") == 1
    finally:
        await on(standby, "SELECT pg_wal_replay_resume()")
    await until(
        lambda: found(reader, "penguins nest"), "the standby did not catch up after resuming"
    )


@pytest.mark.parametrize("paused", [False, True])
async def test_a_key_reads_its_own_writes_every_time(replicated_app, servers, key_client, paused):
    _, standby = servers
    writer, other = await key_client(), await key_client()
    if paused:
        await on(standby, "SELECT pg_wal_replay_pause()")
    try:
        misses = []
        for attempt in range(100):
            token = f"rywtoken{uuid.uuid4().hex[:12]}"
            response = await writer.post(
                "/v1/episodes",
                json={"content": f"attempt {attempt} wrote {token}", "butler": "probe"},
            )
            assert response.status_code == 201, response.text
            if not any(token in content for content in await found(writer, token)):
                misses.append(attempt)
        assert misses == []
        if paused:
            # The standby really was behind: a key that did not write does not see it yet.
            assert await found(other, token) == []
    finally:
        if paused:
            await on(standby, "SELECT pg_wal_replay_resume()")


async def test_every_read_route_runs_on_the_standby(replicated_app, servers, key_client):
    primary, standby = servers
    writer, reader = await key_client(), await key_client()
    entity = (
        await writer.post(
            "/v1/entities", json={"canonical_name": "Ann Lee", "entity_type": "person"}
        )
    ).json()
    fact = await store_fact(writer, "Ann Lee plays the cello in an orchestra")
    rule = (
        await writer.post("/v1/rules", json={"content": "Ask Ann Lee about her cello concerts"})
    ).json()
    episode = (
        await writer.post(
            "/v1/episodes", json={"content": "Ann Lee told me about her cello", "butler": "probe"}
        )
    ).json()
    link = await writer.post(
        "/v1/links",
        json={
            "source_type": "fact",
            "source_id": fact["id"],
            "target_type": "entity",
            "target_id": entity["id"],
            "relation": "related_to",
        },
    )
    assert link.status_code == 201, link.text
    await caught_up(primary, standby)
    name = standby_name(replicated_app)
    before_standby, before_primary = reads_on(name), reads_on("primary")
    reads = [
        reader.post("/v1/search", json={"query": "Ann cello"}),
        reader.post("/v1/recall", json={"topic": "Ann Lee cello"}),
        reader.post("/v1/context", json={"trigger_prompt": "Ann Lee cello", "butler": "probe"}),
        reader.get(f"/v1/graph/entity/{entity['id']}"),
        reader.get("/v1/episodes"),
        reader.get(f"/v1/episodes/{episode['id']}"),
        reader.get("/v1/facts"),
        reader.get(f"/v1/facts/{fact['id']}"),
        reader.get(f"/v1/facts/{fact['id']}/history"),
        reader.get("/v1/rules"),
        reader.get(f"/v1/rules/{rule['id']}"),
        reader.get("/v1/entities"),
        reader.get(f"/v1/entities/{entity['id']}"),
        reader.get(f"/v1/entities/{entity['id']}/facts"),
        reader.get("/v1/links", params={"memory_type": "fact", "memory_id": fact["id"]}),
        reader.get("/v1/events"),
        reader.get("/v1/arcs"),
        reader.get("/v1/procedures"),
        reader.post("/v1/arcs/search", json={"query": "cello"}),
        reader.post("/v1/procedures/search", json={"query": "cello"}),
    ]
    responses = [await request for request in reads]
    assert [(r.request.url.path, r.status_code) for r in responses if r.status_code != 200] == []
    assert reads_on(name) - before_standby == len(reads)
    assert reads_on("primary") == before_primary
    # The reads on the standby counted their references; the primary gets them once flushed.
    recalled = [hit["id"] for hit in responses[1].json()["results"]]
    in_context = [item["id"] for item in responses[2].json()["items"]]
    assert fact["id"] in recalled
    assert responses[7].json()["reference_count"] >= 1
    await replicated_app.state.references.flush()
    counted = await on(
        primary, "SELECT reference_count FROM facts WHERE id = $1", uuid.UUID(fact["id"])
    )
    assert counted == 1 + recalled.count(fact["id"]) + in_context.count(fact["id"])


async def test_killing_the_standby_under_load_loses_no_write_and_answers_no_5xx(
    replicated_app, servers, key_client
):
    primary, standby = servers
    clients = [await key_client() for _ in range(8)]
    acknowledged: list[str] = []
    statuses: list[int] = []
    stop_at = time.monotonic() + 6.0

    async def client_loop(index: int, http: httpx.AsyncClient) -> None:
        turn = 0
        while time.monotonic() < stop_at:
            turn += 1
            response = await http.post(
                "/v1/episodes",
                json={
                    "content": f"client {index} turn {turn} talked about kites",
                    "butler": "load",
                },
            )
            statuses.append(response.status_code)
            if response.status_code == 201:
                acknowledged.append(response.json()["id"])
            for read in (
                http.post("/v1/search", json={"query": f"client {index} kites"}),
                http.post("/v1/recall", json={"topic": "kites"}),
                http.get("/v1/episodes", params={"limit": 5}),
            ):
                statuses.append((await read).status_code)

    async def kill_standby() -> None:
        await asyncio.sleep(2.5)
        await asyncio.to_thread(standby.stop, "immediate")

    try:
        await asyncio.gather(
            kill_standby(), *(client_loop(i, http) for i, http in enumerate(clients))
        )
        assert [s for s in statuses if s >= 500] == []
        assert len(acknowledged) > 8
        stored = await on(
            primary,
            "SELECT count(*) FROM episodes WHERE id = ANY($1::uuid[])",
            [uuid.UUID(i) for i in acknowledged],
        )
        assert stored == len(acknowledged)
        # With the standby gone, reads go to the primary and /readyz names it as down.
        before = reads_on("primary")
        assert await found(clients[0], "kites")
        assert reads_on("primary") > before
        ready = await clients[0].get("/readyz")
        assert ready.status_code == 200
        assert [r["state"] for r in ready.json()["replicas"]] == ["down"]
    finally:
        # The module's other tests read from the standby, whichever order they run in.
        await asyncio.to_thread(standby.start)
        await until(
            lambda: all(r["state"] == "up" for r in replicated_app.state.replicas.status()),
            "the restarted standby was never marked up",
            seconds=60,
        )


async def _swap_on_primary(application: Any) -> None:
    """Swap the vector columns of every table, as a model switch ends, on the primary."""
    async with AsyncSession(application.state.owner_engine) as session, session.begin():
        assert await switch_rows.try_lock_exclusive(session)
        await switch_rows.swap(session)


async def test_the_standby_replays_a_model_switch_only_between_a_readers_statements(
    replicated_app, servers
):
    """A transaction on the standby that read which model fills `embedding` keeps those
    columns to its end: the replay of the switch's swap waits for it."""
    primary, standby = servers
    embedding_column = (
        "SELECT attnum FROM pg_attribute WHERE attrelid = 'episodes'::regclass"
        " AND attname = 'embedding'"
    )
    replay_waits = (
        "SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'"
    )
    before = await on(standby, embedding_column)
    reader = await asyncpg.connect(standby.url(database="engram"))
    try:
        async with reader.transaction(readonly=True):
            await reader.fetchrow("SELECT * FROM embedding_slots()")
            await _swap_on_primary(replicated_app)
            await until(
                lambda: on(standby, replay_waits),
                "the standby replayed the swap under a transaction that read the slots",
            )
            assert await reader.fetchval(embedding_column) == before
        await until(
            lambda: _differs(on(standby, embedding_column), before),
            "the standby did not replay the swap once the reader ended",
        )
    finally:
        await reader.close()
        await _swap_on_primary(replicated_app)
        await until(
            lambda: _equals(on(standby, embedding_column), before),
            "the standby did not replay the swap back",
        )


async def _differs(value: Awaitable[Any], other: Any) -> bool:
    return await value != other


async def _equals(value: Awaitable[Any], other: Any) -> bool:
    return await value == other
