"""Engram on a Citus cluster (a coordinator and two workers, tests/support/citus.py): a
tenant-distributed table with an HNSW index and row-level security routed to one worker, and
Engram's own store distributed by tenant and served from the coordinator."""

import asyncpg
import httpx

from app.core.rls import TENANT_SETTING
from app.postgres import citus
from app.postgres.db import to_libpq_url
from tests.support.citus import CitusCluster
from tests.support.http import post

NOTES_SCHEMA = [
    "CREATE TABLE notes (tenant_id text NOT NULL, id int NOT NULL, body text NOT NULL,"
    " embedding vector(3) NOT NULL, PRIMARY KEY (tenant_id, id))",
    "CREATE INDEX notes_embedding ON notes USING hnsw (embedding vector_cosine_ops)",
    "ALTER TABLE notes ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE notes FORCE ROW LEVEL SECURITY",
    f"CREATE POLICY tenant_isolation ON notes"
    f" USING (tenant_id = current_setting('{TENANT_SETTING}', true))",
    "SELECT create_distributed_table('notes', 'tenant_id')",
    "CREATE ROLE notes_reader LOGIN",
    "GRANT SELECT ON notes TO notes_reader",
    "INSERT INTO notes SELECT 't' || (n % 8), n, 'note ' || n,"
    " ARRAY[n % 3 + 1, n % 5 + 1, 1]::real[]::vector FROM generate_series(1, 400) AS n",
]
NEAREST = "SELECT id FROM notes {where} ORDER BY embedding <=> '[1,1,1]' LIMIT 5"


async def _explain(conn: asyncpg.Connection, statement: str) -> str:
    return "\n".join(row[0] for row in await conn.fetch(f"EXPLAIN {statement}"))


async def test_a_tenant_query_runs_on_one_worker_and_sees_only_its_rows(
    citus_cluster: CitusCluster,
) -> None:
    """A table distributed by tenant_id, with pgvector's HNSW index and a row-level security
    policy on the tenant setting: with SET LOCAL of that setting (forwarded to the workers by
    citus.propagate_set_commands = 'local'), a nearest-neighbour query of one tenant is one
    task on one worker, and even a query that fans out sees only that tenant's rows."""
    owner = await asyncpg.connect(citus_cluster.coordinator.url("engram"))
    try:
        active = await owner.fetch("SELECT node_port FROM citus_get_active_worker_nodes()")
        assert sorted(r["node_port"] for r in active) == sorted(
            w.port for w in citus_cluster.workers
        )
        for statement in NOTES_SCHEMA:
            await owner.execute(statement)
        hnsw_per_worker = await owner.fetch(
            "SELECT result FROM run_command_on_workers($$SELECT count(*) FROM pg_indexes"
            " WHERE indexname LIKE 'notes_embedding_%' AND indexdef LIKE '%USING hnsw%'$$)"
        )
        assert sorted(r["result"] for r in hnsw_per_worker) == ["2", "2"]  # one a shard
    finally:
        await owner.close()
    reader = await asyncpg.connect(
        citus_cluster.coordinator.url("engram").replace("postgres@", "notes_reader@")
    )
    try:
        async with reader.transaction():
            await reader.execute(f"SET LOCAL {TENANT_SETTING} = 't3'")
            plan = await _explain(reader, NEAREST.format(where="WHERE tenant_id = 't3'"))
            assert "Task Count: 1" in plan, plan
            worker_ports = {w.port for w in citus_cluster.workers}
            assert any(f"port={port} " in plan for port in worker_ports), plan
            routed = "SELECT tenant_id FROM notes WHERE tenant_id = 't3'"
            assert [r["tenant_id"] for r in await reader.fetch(routed)] == ["t3"] * 50
            fanned_out = "SELECT tenant_id FROM notes"
            assert "Task Count: 4" in await _explain(reader, fanned_out)
            assert [r["tenant_id"] for r in await reader.fetch(fanned_out)] == ["t3"] * 50
        async with reader.transaction():
            assert await reader.fetch("SELECT 1 FROM notes") == []  # no tenant: no rows
    finally:
        await reader.close()


async def test_engram_is_distributed_by_tenant_and_serves_from_the_coordinator(
    citus_engram_url: str, citus_client: httpx.AsyncClient
) -> None:
    """Engram's migrations reach head on the coordinator and `engram distribute` places every
    table as planned; the app answers /readyz ready, stores an episode and a fact and finds
    both."""
    ready = (await citus_client.get("/readyz")).json()
    assert ready["status"] == "ready" and ready["migrations_at_head"] is True, ready
    episode = await post(
        citus_client, "/v1/episodes", content="Caroline hiked the Dolomites in June", butler="chat"
    )
    fact = await post(
        citus_client,
        "/v1/facts",
        subject="Caroline",
        predicate="hiked_in",
        content="Caroline hiked in the Dolomites",
    )
    response = await citus_client.post(
        "/v1/search", json={"query": "Dolomites hike", "mode": "hybrid", "min_confidence": 0}
    )
    assert response.status_code == 200, response.text
    found = {r["id"] for r in response.json()["results"]}
    assert {episode["id"], fact["id"]} <= found
    conn = await asyncpg.connect(to_libpq_url(citus_engram_url))
    try:
        placed = await citus.placements(conn)
        tables = {
            row[0]
            for row in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            )
        }
        # Running it again places nothing more.
        assert await citus.distribute(conn) == []
    finally:
        await conn.close()
    assert placed == {
        **dict.fromkeys(citus.REFERENCE_TABLES, "reference"),
        **dict.fromkeys(citus.DISTRIBUTED_TABLES, "distributed"),
    }
    assert tables - set(placed) == set(citus.COORDINATOR_TABLES)
