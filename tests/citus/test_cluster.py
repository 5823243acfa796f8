"""What runs on a Citus cluster today (a coordinator and two workers, tests/support/citus.py):
a tenant-distributed table with an HNSW index and row-level security routed to one worker,
Engram itself served from the coordinator, and what Citus refuses of Engram's schema
(docs/scaling.md, "Distributing by tenant")."""

from typing import Any

import asyncpg
import httpx

from app.core.rls import TENANT_SETTING
from app.postgres.db import to_libpq_url
from bench.study.citus_probe import probe, refusal_kind
from tests.support.citus import CitusCluster, migrated_database

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

# Each table's answer when distributed by tenant_id (or made a reference table) alone, then
# past the first refusals (embedding_versions a reference table, triggers allowed); the
# tables docs/scaling.md keeps on the coordinator are not tried.
FIRST_REFUSALS = {
    "agent_events": "triggers",
    "arcs": "triggers",
    "embedding_failures": "accepted",
    "embedding_switches": "local tables refer to it",
    "embedding_versions": "local tables refer to it",
    "entities": "triggers",
    "episodes": "triggers",
    "fact_periods": "foreign key to facts",
    "facts": "triggers",
    "keyword_corpus": "accepted",
    "keyword_postings": "key without tenant_id",
    "keyword_scope_corpus": "subquery in a policy",
    "keyword_scope_terms": "subquery in a policy",
    "keyword_terms": "accepted",
    "memory_links": "triggers",
    "passages": "triggers",
    "pii_salts": "accepted",
    "procedures": "triggers",
    "reflection_consolidations": "foreign key to agent_events",
    "rule_applications": "foreign key to rules",
    "rules": "triggers",
    "run_feedback": "triggers",
    "run_messages": "triggers",
    "runs": "triggers",
    "working_memories": "key without tenant_id",
}
NEXT_REFUSALS = {
    "agent_events": "key without tenant_id",
    "arcs": "key without tenant_id",
    "embedding_switches": "accepted",
    "embedding_versions": "accepted",
    "entities": "foreign key without tenant_id",
    "episodes": "key without tenant_id",
    "fact_periods": "foreign key to facts",
    "facts": "foreign key to entities",
    "keyword_postings": "key without tenant_id",
    "keyword_scope_corpus": "subquery in a policy",
    "keyword_scope_terms": "subquery in a policy",
    "memory_links": "key without tenant_id",
    "passages": "foreign key to episodes",
    "procedures": "foreign key without tenant_id",
    "reflection_consolidations": "foreign key to agent_events",
    "rule_applications": "foreign key to rules",
    "rules": "foreign key to episodes",
    "run_feedback": "foreign key to rules",
    "run_messages": "foreign key to runs",
    "runs": "key without tenant_id",
    "working_memories": "key without tenant_id",
}


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


async def test_engram_migrates_and_serves_from_the_coordinator(
    citus_engram_url: str, citus_client: httpx.AsyncClient
) -> None:
    """Engram's migrations reach head on the coordinator and the app answers /readyz ready,
    stores an episode and a fact and finds both. At this stage every Engram table is local
    to the coordinator: none is distributed or a reference table (Citus knows none)."""
    ready = (await citus_client.get("/readyz")).json()
    assert ready["status"] == "ready" and ready["migrations_at_head"] is True, ready
    episode = await _created(
        citus_client, "/v1/episodes", content="Caroline hiked the Dolomites in June", butler="chat"
    )
    fact = await _created(
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
        assert await conn.fetchval("SELECT count(*) FROM pg_dist_partition") == 0
    finally:
        await conn.close()


async def _created(client: httpx.AsyncClient, path: str, **body: Any) -> dict[str, Any]:
    response = await client.post(path, json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_citus_refuses_what_docs_scaling_lists(citus_cluster: CitusCluster) -> None:
    """Each planned table tried alone on a database at head (bench/study/citus_probe.py):
    what Citus refuses is what step 1 of docs/scaling.md's plan must change."""
    url = await migrated_database(citus_cluster, "engram_probe")
    findings = await probe(url)
    assert {f.table: refusal_kind(f.refusal) for f in findings} == FIRST_REFUSALS
    assert {f.table: refusal_kind(f.then) for f in findings if f.refusal} == NEXT_REFUSALS
    episodes = next(f for f in findings if f.table == "episodes")
    assert episodes.refusal == 'cannot distribute relation "episodes" because it has triggers'
