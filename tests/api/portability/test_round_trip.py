"""Export, erase the tenant, import: every kind of record comes back exactly as it was."""

import json
from typing import Any

from sqlalchemy import text

from app.repositories.portability import TABLES
from tests.support.every_kind import plant_every_kind
from tests.support.rights import erase

NDJSON = {"Content-Type": "application/x-ndjson"}
MARKER = "5550199"
# Tables with a tenant_id that are not records of an export, and why.
NOT_EXPORTED = {
    "api_keys": "credentials stay with the tenant and are never exported",
    "console_sessions": "the web console's signed-in browsers: credentials, like keys",
    "pii_salts": "the secret of the tenant's PII hashes stays with the tenant, like its keys",
    "jobs": "the work queue, not data",
    "memory_events": "the service's record of what happened, kept as tombstones on erasure",
    "passages": "made again from the content on import",
    "embedding_failures": "the backlog's memories set aside: embedded anew on import",
    "keyword_postings": "made again from the content on import",
    "keyword_terms": "made again from the content on import",
    "keyword_corpus": "made again from the content on import",
    "keyword_scope_terms": "made again from the content on import",
    "keyword_scope_corpus": "made again from the content on import",
}


def _records(body: str) -> list[dict[str, Any]]:
    return sorted(
        (json.loads(line) for line in body.splitlines()),
        key=lambda r: (r["kind"], json.dumps(r, sort_keys=True)),
    )


async def _tenant_rows(db_engine: Any, tenant_id: str) -> dict[str, int]:
    """Rows of the tenant in every table that has a tenant_id, by table."""
    async with db_engine.connect() as conn:
        tables = [
            row[0]
            for row in await conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns "
                    "WHERE table_schema = 'public' "
                    "AND column_name = 'tenant_id' ORDER BY 1"
                )
            )
        ]
        return {
            table: (
                await conn.execute(
                    text(f'SELECT count(*) FROM "{table}" WHERE tenant_id = :t'), {"t": tenant_id}
                )
            ).scalar_one()
            for table in tables
        }


async def test_every_kind_of_record_survives_export_erasure_and_import(
    app, settings, client, db_engine
):
    planted = await plant_every_kind(client, app, settings, MARKER)
    exported = await client.get("/v1/export")
    assert exported.status_code == 200
    before = _records(exported.text)
    rows = await _tenant_rows(db_engine, "default")

    exported_tables = {table.name: kind for kind, table in TABLES.items()}
    unknown = sorted(set(rows) - set(exported_tables) - set(NOT_EXPORTED))
    assert unknown == [], f"tables neither exported nor listed in NOT_EXPORTED: {unknown}"
    lines = {kind: sum(1 for r in before if r["kind"] == kind) for kind in TABLES}
    assert [kind for kind, count in lines.items() if count == 0] == [], (
        "the fixture leaves these kinds empty: store one of each"
    )
    assert {table: rows[table] for table in exported_tables} == {
        table: lines[kind] for table, kind in exported_tables.items()
    }

    await erase(client, app, settings, tenant=True, confirm="default")
    assert (await client.get("/v1/export")).text == ""
    left = await _tenant_rows(db_engine, "default")
    assert {
        table: count
        for table, count in left.items()
        if count and table not in ("api_keys", "jobs", "memory_events")
    } == {}

    imported = await client.post("/v1/import", content=exported.content, headers=NDJSON)

    assert imported.status_code == 200, imported.text
    assert imported.json()["imported"] == lines
    assert _records((await client.get("/v1/export")).text) == before
    found = (
        await client.post(
            "/v1/search",
            json={
                "query": "invoice address baker",
                "types": ["run", "run_message", "reflection"],
                "mode": "semantic",
            },
        )
    ).json()["results"]
    assert {planted["run"]["id"], planted["reflection"]["id"]} <= {hit["id"] for hit in found}
