"""Helpers for the data-rights tests: a planted marker, erasure through the API, marker scans,
key ids."""

import uuid
from typing import Any

from sqlalchemy import text

from app.worker import worker
from tests.support.factories import create_entity, store_episode, store_fact, store_rule
from tests.support.http import post
from tests.support.jobs import job_context

# Column types whose text a person's data can sit in.
SCANNED_TYPES = ("text", "character varying", "jsonb", "json", "ARRAY", "tsvector")
# A phone number only the planted rows hold.
MARKER = "5550142"


async def erase(client: Any, app: Any, settings: Any, **selector: Any) -> dict[str, Any]:
    """Request an erasure, let a worker run it, return the finished job."""
    response = await client.post("/v1/erasures", json=selector)
    assert response.status_code == 202, response.text
    await worker.drain(job_context(app, settings, erasure_batch_size=2))
    job: dict[str, Any] = (await client.get(f"/v1/jobs/{response.json()['id']}")).json()
    assert job["status"] == "succeeded", job
    return job


async def marker_hits(db_engine: Any, marker: str, tenant_id: str) -> dict[str, int]:
    """Rows holding `marker` in any text, varchar, jsonb, array or tsvector column of any
    public table (rows of `tenant_id` where the table has a tenant_id), by table.column."""
    hits: dict[str, int] = {}
    async with db_engine.connect() as conn:
        columns = (
            await conn.execute(
                text(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = 'public' ORDER BY table_name, column_name"
                )
            )
        ).all()
        with_tenant = {row.table_name for row in columns if row.column_name == "tenant_id"}
        for row in columns:
            if row.data_type not in SCANNED_TYPES:
                continue
            where = f'CAST("{row.column_name}" AS text) ILIKE :pattern'
            if row.table_name in with_tenant:
                where += " AND tenant_id = :tenant_id"
            count = (
                await conn.execute(
                    text(f'SELECT count(*) FROM "{row.table_name}" WHERE {where}'),
                    {"pattern": f"%{marker}%", "tenant_id": tenant_id},
                )
            ).scalar_one()
            if count:
                hits[f"{row.table_name}.{row.column_name}"] = count
    return hits


async def key_id_of(sql: Any, tenant_id: str) -> str:
    """The id of the tenant's (only) API key."""
    [row] = await sql("SELECT id FROM api_keys WHERE tenant_id = :t", t=tenant_id)
    return str(row["id"])


async def plant(client, marker: str = MARKER) -> dict[str, str]:
    """The marker in an entity, an episode, two versions of a fact, and a rule's harmful
    feedback; a link and an entity merge around them. Their ids."""
    entity = await create_entity(
        client, "Ann Example", metadata={"phone": marker}, aliases=[f"Ann {marker}"]
    )
    twin = await create_entity(client, f"Ann at {marker}")
    merged = await client.post(f"/v1/entities/{entity['id']}/merge", json={"source_id": twin["id"]})
    assert merged.status_code == 200
    session_id = str(uuid.uuid4())
    episode = await store_episode(client, f"Ann said: call me on {marker}", session_id=session_id)
    old = await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        content=f"Ann's phone is {marker}",
        entity_id=entity["id"],
    )
    new = await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        content=f"Ann's phone is {marker} (mobile)",
        entity_id=entity["id"],
    )
    rule = await store_rule(client, "Read phone numbers back to the user")
    harmful = await client.post(
        f"/v1/rules/{rule['id']}/harmful", json={"reason": f"it read {marker} out loud"}
    )
    assert harmful.status_code == 200
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=new["id"],
        target_type="episode",
        target_id=episode["id"],
        relation="derived_from",
    )
    # Links: new -> episode (derived_from), new -> old (supersedes, made by the service).
    return {
        "entity": entity["id"],
        "twin": twin["id"],
        "episode": episode["id"],
        "old": old["id"],
        "new": new["id"],
        "rule": rule["id"],
        "session": session_id,
    }
