"""After each erasure selector, nothing it erased comes back through any read path: search
in every mode and type, recall, context, graph, export, the ledger views, reads by id and
the MCP tools, nor as passages, keyword postings or keyword statistics."""

import json
from typing import Any

import pytest
from sqlalchemy import text

from app.schemas.erasures import SELECTORS
from tests.support.every_kind import plant_every_kind
from tests.support.factories import create_entity, store_episode, store_fact, store_rule
from tests.support.http import post
from tests.support.jobs import consolidate
from tests.support.mcp import ok
from tests.support.rights import erase, marker_hits

GONE = "7310442"
KEPT = "8820553"
QUERY = f"Ann phone office code {GONE}"
SEARCH_TYPES = ["episode", "fact", "rule", "run", "run_message", "reflection"]
LEDGER = "/v1/ledgers/village"


class World:
    """What a scenario planted: the selector, the ids it must erase, the ids that stay."""

    def __init__(self, selector: dict[str, Any]) -> None:
        self.selector = selector
        self.gone: list[tuple[str, str]] = []
        self.kept: list[tuple[str, str]] = []


async def _one(client: Any, path: str, **params: Any) -> dict[str, Any]:
    [item] = (await client.get(path, params=params)).json()["items"]
    result: dict[str, Any] = item
    return result


async def _session(client: Any, app: Any, settings: Any) -> World:
    """Two turns of a session, consolidated with a turn of another session into a fact that
    names no source, a rule and a procedure; an arc and a working memory point at a turn."""
    world = World({"session_id": "s-erased"})
    kept = await store_episode(client, f"Bob likes green tea {KEPT}", session_id="s-kept")
    first = await store_episode(client, f"Ann said: call me on {GONE}", session_id="s-erased")
    second = await store_episode(client, f"Ann: my office code is {GONE}", session_id="s-erased")
    await consolidate(
        client,
        app,
        settings,
        lambda prompt: {
            "new_facts": [
                {"subject": "Ann", "predicate": "phone", "content": f"Ann's phone is {GONE}"},
                {
                    "subject": "Bob",
                    "predicate": "drink",
                    "content": f"Bob drinks green tea {KEPT}",
                    "source_episode_ids": [kept["id"]],
                },
            ],
            "new_rules": [{"content": f"Call Ann on {GONE}", "source_episode_ids": [first["id"]]}],
            "procedures": [
                {
                    "name": "call_ann",
                    "description": f"Dial {GONE}",
                    "steps": [{"action": "dial"}],
                    "source_episode_ids": [second["id"]],
                }
            ],
        },
    )
    fact = await _one(client, "/v1/facts", subject="Ann")
    rule = await _one(client, "/v1/rules", scope="chat")
    procedure = await _one(client, "/v1/procedures", agent_id="chat")
    bob = await _one(client, "/v1/facts", subject="Bob")
    await post(
        client,
        "/v1/arcs",
        title="Ann's calls",
        arc_type="interaction_arc",
        key_events=[
            {"memory_type": "episode", "memory_id": first["id"], "description": f"Ann gave {GONE}"},
            {"memory_type": "episode", "memory_id": kept["id"], "description": "Bob and tea"},
        ],
    )
    response = await client.put(
        "/v1/working-memory/chat/s-erased", json={"retrieved_memory_ids": [first["id"], kept["id"]]}
    )
    assert response.status_code == 201, response.text
    world.gone = [
        ("episode", first["id"]),
        ("episode", second["id"]),
        ("fact", fact["id"]),
        ("rule", rule["id"]),
        ("procedure", procedure["id"]),
    ]
    world.kept = [("episode", kept["id"]), ("fact", bob["id"])]
    return world


async def _butler(client: Any, app: Any, settings: Any) -> World:
    """A butler's episodes consolidated into a fact, and a rule it is the source of; another
    butler's episode and fact."""
    world = World({"butler": "chat"})
    kept = await store_episode(client, f"Bob likes green tea {KEPT}", butler="mail")
    gone = await store_episode(client, f"Ann said: call me on {GONE}", butler="chat")
    rule = await store_rule(client, f"Call Ann on {GONE}", source_butler="chat")

    def answer(prompt: str) -> dict[str, Any]:
        if "Bob likes green tea" in prompt:
            return {
                "new_facts": [
                    {
                        "subject": "Bob",
                        "predicate": "drink",
                        "content": f"Bob drinks green tea {KEPT}",
                    }
                ]
            }
        return {
            "new_facts": [
                {"subject": "Ann", "predicate": "phone", "content": f"Ann's phone is {GONE}"}
            ]
        }

    await consolidate(client, app, settings, answer)
    fact = await _one(client, "/v1/facts", subject="Ann")
    bob = await _one(client, "/v1/facts", subject="Bob")
    world.gone = [("episode", gone["id"]), ("fact", fact["id"]), ("rule", rule["id"])]
    world.kept = [("episode", kept["id"]), ("fact", bob["id"])]
    return world


async def _subject(client: Any, app: Any, settings: Any) -> World:
    """Two versions of a fact about a subject, linked to an episode that stays."""
    world = World({"subject": "ann  EXAMPLE"})
    kept = await store_episode(client, f"Bob likes green tea {KEPT}")
    old = await store_fact(
        client, subject="Ann Example", predicate="phone", content=f"Ann's phone is {GONE}"
    )
    new = await store_fact(
        client, subject="Ann Example", predicate="phone", content=f"Ann's office code is {GONE}"
    )
    bob = await store_fact(
        client, subject="Bob", predicate="drink", content=f"Bob drinks green tea {KEPT}"
    )
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=new["id"],
        target_type="episode",
        target_id=kept["id"],
        relation="derived_from",
    )
    world.gone = [("fact", old["id"]), ("fact", new["id"])]
    world.kept = [("episode", kept["id"]), ("fact", bob["id"])]
    return world


async def _scope(client: Any, app: Any, settings: Any) -> World:
    """A fact and a rule of a scope; a global fact."""
    world = World({"scope": "work"})
    fact = await store_fact(
        client, subject="Ann", predicate="phone", content=f"Ann's phone is {GONE}", scope="work"
    )
    rule = await store_rule(client, f"Call Ann on {GONE}", scope="work")
    bob = await store_fact(
        client, subject="Bob", predicate="drink", content=f"Bob drinks green tea {KEPT}"
    )
    world.gone = [("fact", fact["id"]), ("rule", rule["id"])]
    world.kept = [("fact", bob["id"])]
    return world


async def _entity(client: Any, app: Any, settings: Any) -> World:
    """An entity with a merged twin, two versions of its fact, a relation to an entity that
    stays, and an arc about both."""
    ann = await create_entity(
        client, "Ann Example", aliases=[f"Ann {GONE}"], metadata={"phone": GONE}
    )
    twin = await create_entity(client, f"Ann at {GONE}")
    merged = await client.post(f"/v1/entities/{ann['id']}/merge", json={"source_id": twin["id"]})
    assert merged.status_code == 200, merged.text
    bob = await create_entity(client, "Bob Example")
    world = World({"entity_id": ann["id"]})
    old = await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        content=f"Ann's phone is {GONE}",
        entity_id=ann["id"],
    )
    new = await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        content=f"Ann's office code is {GONE}",
        entity_id=ann["id"],
    )
    kept = await store_fact(
        client,
        subject="Bob",
        predicate="drink",
        content=f"Bob drinks green tea {KEPT}",
        entity_id=bob["id"],
    )
    await post(
        client,
        "/v1/links",
        source_type="entity",
        source_id=ann["id"],
        target_type="entity",
        target_id=bob["id"],
        relation="knows",
    )
    await post(
        client,
        "/v1/arcs",
        title="Ann and Bob",
        arc_type="interaction_arc",
        entity_ids=[ann["id"], bob["id"]],
    )
    world.gone = [
        ("entity", ann["id"]),
        ("entity", twin["id"]),
        ("fact", old["id"]),
        ("fact", new["id"]),
    ]
    world.kept = [("entity", bob["id"]), ("fact", kept["id"])]
    return world


async def _failed_run(client: Any, task_id: str, marker: str, fact_id: str) -> dict[str, Any]:
    """A failed run with messages, critic feedback and the lesson rule it became; a fact
    that stays links to it."""
    run = await post(
        client, "/v1/runs", task_id=task_id, success=False, summary=f"Called Ann on {marker}"
    )
    response = await client.post(
        f"/v1/runs/{run['id']}/messages/batch",
        json={
            "items": [
                {"role": "planner", "content": f"Find Ann's office code {marker}"},
                {"role": "executor", "content": f"Dialled {marker}, no answer"},
            ]
        },
    )
    assert response.status_code == 201, response.text
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.1,
        rationale=f"Ann's phone is {marker}, not the office code",
    )
    lessons = await client.post("/v1/runs/lessons", json={"run_id": run["id"]})
    [rule_id] = lessons.json()["rule_ids"]
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=fact_id,
        target_type="run",
        target_id=run["id"],
        relation="related_to",
    )
    return {"run": run, "rule_id": rule_id}


async def _run(client: Any, app: Any, settings: Any) -> World:
    """A run with messages, feedback and its lesson rule; another run of the same task."""
    bob = await store_fact(
        client, subject="Bob", predicate="drink", content=f"Bob drinks green tea {KEPT}"
    )
    kept = await _failed_run(client, "call-ann", KEPT, bob["id"])
    gone = await _failed_run(client, "call-ann", GONE, bob["id"])
    world = World({"run_id": gone["run"]["id"]})
    world.gone = [("run", gone["run"]["id"]), ("rule", gone["rule_id"])]
    world.kept = [("run", kept["run"]["id"]), ("rule", kept["rule_id"]), ("fact", bob["id"])]
    return world


async def _task(client: Any, app: Any, settings: Any) -> World:
    """Two runs of a task (named by the marker too) with their lessons; a run of another."""
    bob = await store_fact(
        client, subject="Bob", predicate="drink", content=f"Bob drinks green tea {KEPT}"
    )
    kept = await _failed_run(client, "call-bob", KEPT, bob["id"])
    first = await _failed_run(client, f"call-ann-{GONE}", GONE, bob["id"])
    second = await _failed_run(client, f"call-ann-{GONE}", GONE, bob["id"])
    world = World({"task_id": f"call-ann-{GONE}"})
    world.gone = [
        ("run", first["run"]["id"]),
        ("rule", first["rule_id"]),
        ("run", second["run"]["id"]),
        ("rule", second["rule_id"]),
    ]
    world.kept = [("run", kept["run"]["id"]), ("rule", kept["rule_id"]), ("fact", bob["id"])]
    return world


async def _tenant(client: Any, app: Any, settings: Any) -> World:
    """Every kind of record."""
    world = World({"tenant": True, "confirm": "default"})
    planted = await plant_every_kind(client, app, settings, GONE)
    world.gone = [("episode", e["id"]) for e in planted["episodes"]] + [
        ("fact", planted["old"]["id"]),
        ("fact", planted["new"]["id"]),
        ("rule", planted["rule"]["id"]),
        ("entity", planted["ann"]["id"]),
        ("run", planted["run"]["id"]),
        ("agent_event", planted["reflection"]["id"]),
        ("procedure", planted["procedures"][0]["id"]),
        ("arc", planted["arc"]["id"]),
    ]
    return world


SCENARIOS = {
    "session_id": _session,
    "butler": _butler,
    "subject": _subject,
    "scope": _scope,
    "entity_id": _entity,
    "run_id": _run,
    "task_id": _task,
    "tenant": _tenant,
}
PATHS = {
    "episode": "/v1/episodes",
    "fact": "/v1/facts",
    "rule": "/v1/rules",
    "entity": "/v1/entities",
    "run": "/v1/runs",
    "procedure": "/v1/procedures",
    "arc": "/v1/arcs",
}


def _leaks(body: Any, world: World) -> list[str]:
    """The marker and the erased ids found in a response body."""
    found = json.dumps(body)
    return [needle for needle in (GONE, *(i for _, i in world.gone)) if needle in found]


async def _http_reads(client: Any, world: World) -> dict[str, Any]:
    """The answer of every HTTP read path, by name."""
    answers: dict[str, Any] = {}
    for mode in ("semantic", "keyword", "hybrid"):
        answers[f"search {mode}"] = (
            await client.post(
                "/v1/search",
                json={
                    "query": QUERY,
                    "types": SEARCH_TYPES,
                    "mode": mode,
                    "limit": 100,
                    "min_confidence": 0,
                },
            )
        ).json()
    answers["recall"] = (
        await client.post("/v1/recall", json={"topic": QUERY, "limit": 100, "min_confidence": 0})
    ).json()
    answers["context"] = (
        await client.post("/v1/context", json={"trigger_prompt": QUERY, "butler": "chat"})
    ).json()
    answers["export"] = (await client.get("/v1/export")).text
    answers["ledger events"] = (await client.get(f"{LEDGER}/events")).json()
    answers["reflections"] = (await client.get(f"{LEDGER}/reflections")).json()
    answers["agent context"] = (
        await client.post(f"{LEDGER}/agents/alice/context", json={"turn": 10, "query": QUERY})
    ).json()
    answers["entities"] = (await client.get("/v1/entities")).json()
    answers["resolve"] = (await client.post("/v1/entities/resolve", json={"name": "Ann"})).json()
    for kind, node in world.kept:
        answers[f"graph {kind}"] = (
            await client.get(f"/v1/graph/{kind}/{node}", params={"hops": 3})
        ).json()
    for kind, node in world.gone:
        if kind in PATHS:
            answers[f"get {kind} {node}"] = (await client.get(f"{PATHS[kind]}/{node}")).status_code
    return answers


async def _mcp_reads(open_mcp: Any, world: World) -> dict[str, Any]:
    """The answer of every MCP read tool, by name."""
    answers: dict[str, Any] = {}
    async with open_mcp("default") as session:
        calls = {
            "memory_search": {
                "query": QUERY,
                "types": ["episode", "fact", "rule"],
                "limit": 100,
                "min_confidence": 0,
            },
            "memory_recall": {"topic": QUERY, "limit": 100},
            "memory_context": {"trigger_prompt": QUERY, "butler": "chat"},
            "run_search": {"query": QUERY},
            "agent_context": {
                "ledger_name": "village",
                "agent_id": "alice",
                "turn": 10,
                "query": QUERY,
            },
            "entity_resolve": {"name": "Ann"},
        }
        for tool, arguments in calls.items():
            answers[tool] = ok(await session.call_tool(tool, arguments))
        for kind, node in world.gone:
            if kind in ("episode", "fact", "rule"):
                result = await session.call_tool(
                    "memory_get", {"memory_type": kind, "memory_id": node}
                )
                answers[f"memory_get {node}"] = result.is_error
    return answers


async def _stored_traces(db_engine: Any, world: World) -> dict[str, int]:
    """Passages and keyword postings of erased memories, and keyword statistics that do not
    add up to the postings left, read as the owner."""
    ids = [node for _, node in world.gone]
    checks = {
        "passages": "SELECT count(*) FROM passages WHERE tenant_id = 'default' AND "
        "CAST(:ids AS uuid[]) && ARRAY[episode_id, fact_id, rule_id]",
        "keyword_postings": "SELECT count(*) FROM keyword_postings WHERE tenant_id = "
        "'default' AND memory_id = ANY(CAST(:ids AS uuid[]))",
        "keyword_terms": """
            SELECT count(*) FROM keyword_terms t FULL JOIN (
                SELECT term, count(*) AS n FROM keyword_postings
                WHERE tenant_id = 'default' GROUP BY term) p ON p.term = t.term
            WHERE (t.tenant_id = 'default' OR t.tenant_id IS NULL)
              AND coalesce(t.doc_freq, 0) <> coalesce(p.n, 0)""",
        "keyword_corpus": """
            SELECT count(*) FROM (
                SELECT count(DISTINCT (memory_type, memory_id)) AS docs FROM keyword_postings
                WHERE tenant_id = 'default') p
            LEFT JOIN keyword_corpus c ON c.tenant_id = 'default'
            WHERE coalesce(c.doc_count, 0) <> p.docs""",
        "keyword_scope_terms": """
            SELECT count(*) FROM keyword_scope_terms t FULL JOIN (
                SELECT scope, term, count(*) AS n FROM keyword_postings
                WHERE tenant_id = 'default' GROUP BY scope, term) p
              ON p.scope = t.scope AND p.term = t.term
            WHERE (t.tenant_id = 'default' OR t.tenant_id IS NULL)
              AND coalesce(t.doc_freq, 0) <> coalesce(p.n, 0)""",
    }
    async with db_engine.connect() as conn:
        return {
            name: (await conn.execute(text(query), {"ids": ids})).scalar_one()
            for name, query in checks.items()
        }


ORIGINS = {"session_id": "session", "butler": "butler", "run_id": "run", "task_id": "task"}


async def _origins_left(db_engine: Any, world: World) -> int:
    """Facts, rules and procedures left whose `origins` still name what was erased."""
    named = [
        f"{ORIGINS[name]}:{value}" for name, value in world.selector.items() if name in ORIGINS
    ]
    async with db_engine.connect() as conn:
        return int(
            (
                await conn.execute(
                    text(
                        "SELECT (SELECT count(*) FROM facts WHERE "
                        "origins && CAST(:named AS text[])) "
                        "+ (SELECT count(*) FROM rules WHERE origins "
                        "&& CAST(:named AS text[])) "
                        "+ (SELECT count(*) FROM procedures WHERE origins "
                        "&& CAST(:named AS text[]))"
                    ),
                    {"named": named},
                )
            ).scalar_one()
        )


@pytest.mark.parametrize("selector", list(SCENARIOS))
async def test_nothing_an_erasure_took_comes_back_through_any_read_path(
    selector, app, settings, client, db_engine, mcp_as
):
    world = await SCENARIOS[selector](client, app, settings)
    before = await _http_reads(client, world)
    assert _leaks(before["search semantic"], world), "the scenario must be findable first"
    if set(world.selector) & set(ORIGINS):
        assert await _origins_left(db_engine, world) > 0, "what was learned names its origin"

    await erase(client, app, settings, **world.selector)

    http = await _http_reads(client, world)
    mcp = await _mcp_reads(mcp_as, world)
    leaks = {
        name: _leaks(answer, world)
        for name, answer in {**http, **mcp}.items()
        if not name.startswith(("get ", "memory_get "))
    }
    assert {name: found for name, found in leaks.items() if found} == {}
    assert {
        name: status for name, status in http.items() if name.startswith("get ") and status != 404
    } == {}
    assert all(failed for name, failed in mcp.items() if name.startswith("memory_get "))
    assert await _stored_traces(db_engine, world) == dict.fromkeys(
        ("passages", "keyword_postings", "keyword_terms", "keyword_corpus", "keyword_scope_terms"),
        0,
    )
    hits = await marker_hits(db_engine, GONE, "default")
    assert hits == {}
    assert await _origins_left(db_engine, world) == 0
    for kind, node in world.kept:
        assert (await client.get(f"{PATHS[kind]}/{node}")).status_code == 200, (kind, node)
    if world.kept:
        assert KEPT in json.dumps(http["search semantic"])


async def test_a_tenant_erasure_leaves_other_tenants_readable(
    app, settings, tenant_client, db_engine
):
    victim = await tenant_client("victim")
    bystander = await tenant_client("bystander")
    await plant_every_kind(bystander, app, settings, KEPT)
    exported = (await bystander.get("/v1/export")).text
    await store_episode(victim, f"Ann said: call me on {GONE}")

    await erase(victim, app, settings, tenant=True, confirm="victim")

    assert (await bystander.get("/v1/export")).text == exported
    assert await marker_hits(db_engine, GONE, "victim") == {}


def test_every_selector_has_a_scenario():
    assert set(SELECTORS) == set(SCENARIOS)
