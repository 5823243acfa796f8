"""Requests of one tenant aimed at another's rows, for the isolation tests: tenant A's one
of everything, a snapshot of its rows, and the vocabulary of the calls made against them."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

A_SECRET = "alphasecret"
TENANT_TABLES = (
    "episodes",
    "facts",
    "rules",
    "memory_links",
    "entities",
    "memory_events",
    "rule_applications",
    "jobs",
    "api_keys",
    "runs",
    "run_messages",
    "run_feedback",
    "agent_events",
    "working_memories",
    "procedures",
    "arcs",
)
PROCEDURE_STEPS = [{"step": 1, "action": "greet"}]


@dataclass
class Call:
    """One request tenant B makes and the statuses it may get."""

    build: Callable[[dict[str, str]], dict[str, Any]]
    allowed: set[int]
    path_ids: Callable[[dict[str, str]], dict[str, str]] = field(default=lambda ids: {})


def own(kind: str, param: str = "") -> Callable[[dict[str, str]], dict[str, str]]:
    """Fill the path parameter with A's id of `kind`."""
    return lambda ids: {param or f"{kind}_id": ids[kind]}


def body(payload: Callable[[dict[str, str]], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The request sends `payload` as its JSON body."""
    return lambda ids: {"json": payload(ids)}


def query(params: Callable[[dict[str, str]], dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """The request sends `params` as its query string."""
    return lambda ids: {"params": params(ids)}


NOTHING: Callable[[dict[str, str]], dict[str, Any]] = lambda ids: {}  # noqa: E731


async def seed_tenant_a(client) -> dict[str, str]:
    """One of everything for tenant A; returns A's ids by kind."""

    async def post(path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await client.post(path, json=payload)
        assert response.status_code in (200, 201, 202), (path, response.text)
        return response.json()

    entity = await post(
        "/v1/entities",
        {"canonical_name": "Quokka Person", "entity_type": "person", "aliases": [A_SECRET]},
    )
    twin = await post("/v1/entities", {"canonical_name": "Quokka Twin", "entity_type": "person"})
    episode = await post(
        "/v1/episodes",
        {"content": f"quokka zebrafinch visit {A_SECRET}", "butler": "shared-butler"},
    )
    fact = await post(
        "/v1/facts",
        {
            "subject": "Quokka",
            "predicate": "lives_in",
            "content": f"The quokka lives on Rottnest {A_SECRET}",
            "entity_id": entity["id"],
            "scope": "shared-scope",
        },
    )
    await post(
        "/v1/facts",
        {"subject": "Shared", "predicate": "colour", "content": f"quokka brownfur {A_SECRET}"},
    )
    rule = await post(
        "/v1/rules", {"content": f"Mention the quokka politely {A_SECRET}", "scope": "shared-scope"}
    )
    await post(
        "/v1/links",
        {
            "source_type": "fact",
            "source_id": fact["id"],
            "target_type": "episode",
            "target_id": episode["id"],
            "relation": "derived_from",
        },
    )
    job = await post("/v1/jobs/decay")
    run = await post(
        "/v1/runs",
        {
            "task_id": "shared-task",
            "success": False,
            "summary": f"quokka run zebrafinch {A_SECRET}",
        },
    )
    await post(
        f"/v1/runs/{run['id']}/messages",
        {"role": "critic", "content": f"quokka brownfur {A_SECRET}"},
    )
    await post(
        f"/v1/runs/{run['id']}/feedback",
        {"source": "critic", "rating": 0.1, "rationale": f"politely {A_SECRET}"},
    )
    event = await post(
        "/v1/ledgers/shared-ledger/events",
        {
            "agent_id": "alice",
            "kind": "world.observed",
            "turn": 1,
            "content": f"quokka Rottnest {A_SECRET}",
        },
    )
    reflection = await post(
        "/v1/ledgers/shared-ledger/agents/alice/reflections",
        {"belief": f"quokka zebrafinch {A_SECRET}", "based_on": [event["id"]]},
    )
    response = await client.put(
        "/v1/working-memory/shared-agent/shared-session",
        json={"scratchpad": {"secret-key": A_SECRET}},
    )
    assert response.status_code == 201, response.text
    procedure = await post(
        "/v1/procedures",
        {
            "agent_id": "shared-agent",
            "name": "quokka routine",
            "description": f"Feed the quokka politely {A_SECRET}",
            "steps": PROCEDURE_STEPS,
            "learned_from": [{"memory_type": "episode", "memory_id": episode["id"]}],
        },
    )
    arc = await post(
        "/v1/arcs",
        {
            "title": f"The quokka saga {A_SECRET}",
            "arc_type": "incident",
            "scope": "shared-scope",
            "entity_ids": [entity["id"]],
        },
    )
    return {
        "entity": entity["id"],
        "twin": twin["id"],
        "episode": episode["id"],
        "fact": fact["id"],
        "rule": rule["id"],
        "job": job["id"],
        "run": run["id"],
        "agent_event": event["id"],
        "reflection": reflection["id"],
        "procedure": procedure["id"],
        "arc": arc["id"],
    }


async def snapshot(db_engine, tenant_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of the tenant, table by table."""
    rows: dict[str, list[dict[str, Any]]] = {}
    async with db_engine.connect() as conn:
        for table in TENANT_TABLES:
            result = await conn.execute(
                text(f"SELECT * FROM {table} WHERE tenant_id = :t ORDER BY 1"), {"t": tenant_id}
            )
            rows[table] = [dict(row) for row in result.mappings()]
    return rows


def v1_routes(app) -> list[tuple[str, str]]:
    """(METHOD, path template) of every documented /v1 operation."""
    routes = sorted(
        (method.upper(), path)
        for path, methods in app.openapi()["paths"].items()
        if path.startswith("/v1/")
        for method in methods
    )
    assert len(routes) > 20
    return routes
