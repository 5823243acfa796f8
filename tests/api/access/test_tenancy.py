"""Tenant isolation, generated from the route table.

Tenant A stores one of everything. Tenant B, with its own key, then calls every /v1 route
aimed at A's data. B must get 404 for A's identifiers (exactly like unknown ones), never see
any of A's ids or text, and leave every one of A's rows as it was. A route missing from
`B_REQUESTS` fails the test, so a new route cannot escape the check.

Each test runs twice: with row-level security binding every request to its tenant, and with
request transactions in the system scope, where only the queries' WHERE clauses keep tenants
apart; both layers must hold on their own.
"""

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.tenancy import (
    A_SECRET,
    NOTHING,
    PROCEDURE_STEPS,
    Call,
    body,
    own,
    query,
    seed_tenant_a,
    snapshot,
    v1_routes,
)

# Words that appear only in tenant A's memories; B never sends them.
A_WORDS = (A_SECRET, "zebrafinch", "Rottnest", "brownfur", "politely")
NOT_FOUND = {404}
REJECTED = {404, 422}
OK = {200}
SHARED_LEDGER: Callable[[dict[str, str]], dict[str, str]] = (  # noqa: E731
    lambda ids: {"ledger_name": "shared-ledger"}
)
# A's working memory is (shared-agent, shared-session); B names the same key.
SHARED_SESSION = {"agent_id": "shared-agent", "session_id": "shared-session"}
SHARED_KEY = {**SHARED_SESSION, "key": "secret-key"}
WORKING_MEMORY = "/v1/working-memory/{agent_id}/{session_id}"
SCRATCHPAD_KEY = WORKING_MEMORY + "/scratchpad/{key}"


def shared(path_values: dict[str, str]) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda ids: path_values


B_REQUESTS: dict[tuple[str, str], list[Call]] = {
    ("POST", "/v1/episodes"): [
        Call(body(lambda ids: {"content": "b note", "butler": "shared-butler"}), {201})
    ],
    ("GET", "/v1/episodes"): [
        Call(query(lambda ids: {"butler": "shared-butler", "include_expired": "true"}), OK)
    ],
    ("POST", "/v1/episodes/batch"): [
        Call(body(lambda ids: {"items": [{"content": "b", "butler": "shared-butler"}]}), {201})
    ],
    ("GET", "/v1/episodes/{episode_id}"): [Call(NOTHING, NOT_FOUND, own("episode"))],
    ("POST", "/v1/episodes/{episode_id}/forget"): [Call(NOTHING, NOT_FOUND, own("episode"))],
    ("POST", "/v1/facts"): [
        Call(
            body(
                lambda ids: {
                    "subject": "Shared",
                    "predicate": "colour",
                    "content": "b thinks it is blue",
                }
            ),
            {201},
        ),
        Call(
            body(
                lambda ids: {
                    "subject": "x",
                    "predicate": "y",
                    "content": "z",
                    "entity_id": ids["entity"],
                }
            ),
            {422},
        ),
        Call(
            body(
                lambda ids: {
                    "subject": "x",
                    "predicate": "y",
                    "content": "z",
                    "source_episode_id": ids["episode"],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/facts"): [
        Call(query(lambda ids: {"subject": "Shared"}), OK),
        Call(query(lambda ids: {"entity_id": ids["entity"]}), OK),
    ],
    ("POST", "/v1/facts/bulk"): [
        Call(
            body(
                lambda ids: {
                    "items": [
                        {"subject": "Shared", "predicate": "colour", "content": "b says green"}
                    ]
                }
            ),
            OK,
        ),
        Call(
            body(
                lambda ids: {
                    "items": [
                        {
                            "subject": "x",
                            "predicate": "y",
                            "content": "z",
                            "entity_id": ids["entity"],
                        }
                    ]
                }
            ),
            {422},
        ),
    ],
    # Each of A's facts is a 404 item in a 200 answer (tenant_b_cannot_reach_tenant_a checks
    # nothing of A's changed).
    ("POST", "/v1/facts/bulk/get"): [
        Call(
            body(
                lambda ids: {
                    "items": [{"id": ids["fact"]}, {"subject": "Quokka", "predicate": "lives_in"}]
                }
            ),
            OK,
        )
    ],
    ("POST", "/v1/facts/bulk/delete"): [
        Call(
            body(
                lambda ids: {
                    "items": [{"id": ids["fact"]}, {"subject": "Quokka", "predicate": "lives_in"}]
                }
            ),
            OK,
        )
    ],
    ("GET", "/v1/facts/{fact_id}"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("GET", "/v1/facts/{fact_id}/history"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/facts/{fact_id}/confirm"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/facts/{fact_id}/forget"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/facts/{fact_id}/contradict"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/rules"): [
        Call(body(lambda ids: {"content": "b rule", "scope": "shared-scope"}), {201}),
        Call(body(lambda ids: {"content": "b rule", "source_episode_id": ids["episode"]}), {422}),
    ],
    ("GET", "/v1/rules"): [
        Call(query(lambda ids: {"scope": "shared-scope", "include_forgotten": "true"}), OK)
    ],
    ("GET", "/v1/rules/{rule_id}"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/confirm"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/forget"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/helpful"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/harmful"): [
        Call(body(lambda ids: {"reason": "b says so"}), NOT_FOUND, own("rule"))
    ],
    ("POST", "/v1/rules/{rule_id}/invert"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/jobs/consolidation"): [Call(NOTHING, {202})],
    ("POST", "/v1/jobs/decay"): [Call(NOTHING, {202})],
    ("POST", "/v1/jobs/cleanup"): [Call(body(lambda ids: {"max_entries": 0}), {202})],
    ("GET", "/v1/jobs"): [Call(NOTHING, OK)],
    ("GET", "/v1/jobs/{job_id}"): [Call(NOTHING, NOT_FOUND, own("job"))],
    ("POST", "/v1/entities"): [
        Call(body(lambda ids: {"canonical_name": "Quokka Person", "entity_type": "person"}), {201})
    ],
    ("GET", "/v1/entities"): [Call(query(lambda ids: {"include_merged": "true"}), OK)],
    ("POST", "/v1/entities/resolve"): [
        Call(body(lambda ids: {"name": "Quokka", "enable_fuzzy": True}), OK)
    ],
    ("GET", "/v1/entities/{entity_id}"): [Call(NOTHING, NOT_FOUND, own("entity"))],
    ("PATCH", "/v1/entities/{entity_id}"): [
        Call(body(lambda ids: {"metadata": {"owner": "b"}}), NOT_FOUND, own("entity"))
    ],
    ("GET", "/v1/entities/{entity_id}/facts"): [Call(NOTHING, NOT_FOUND, own("entity"))],
    ("POST", "/v1/entities/{target_id}/merge"): [
        Call(body(lambda ids: {"source_id": ids["twin"]}), NOT_FOUND, own("entity", "target_id"))
    ],
    ("POST", "/v1/links"): [
        Call(
            body(
                lambda ids: {
                    "source_type": "fact",
                    "source_id": ids["fact"],
                    "target_type": "episode",
                    "target_id": ids["episode"],
                    "relation": "supports",
                }
            ),
            REJECTED,
        )
    ],
    ("GET", "/v1/links"): [
        Call(query(lambda ids: {"memory_type": "fact", "memory_id": ids["fact"]}), {200, 404})
    ],
    ("DELETE", "/v1/links"): [
        Call(
            query(
                lambda ids: {
                    "source_type": "fact",
                    "source_id": ids["fact"],
                    "target_type": "episode",
                    "target_id": ids["episode"],
                }
            ),
            NOT_FOUND,
        ),
        Call(
            query(
                lambda ids: {
                    "source_type": "fact",
                    "source_id": ids["fact"],
                    "target_type": "episode",
                    "target_id": ids["episode"],
                    "relation": "derived_from",
                }
            ),
            NOT_FOUND,
        ),
    ],
    ("GET", "/v1/graph/{node_type}/{node_id}"): [
        Call(NOTHING, NOT_FOUND, lambda ids: {"node_type": "fact", "node_id": ids["fact"]}),
        Call(NOTHING, NOT_FOUND, lambda ids: {"node_type": "entity", "node_id": ids["entity"]}),
        Call(NOTHING, NOT_FOUND, lambda ids: {"node_type": "run", "node_id": ids["run"]}),
        Call(
            NOTHING, NOT_FOUND, lambda ids: {"node_type": "procedure", "node_id": ids["procedure"]}
        ),
        Call(NOTHING, NOT_FOUND, lambda ids: {"node_type": "arc", "node_id": ids["arc"]}),
    ],
    ("POST", "/v1/search"): [
        Call(body(lambda ids, mode=mode: {"query": "quokka lives", "mode": mode}), OK)
        for mode in ("semantic", "keyword", "hybrid")
    ]
    + [
        Call(
            body(
                lambda ids, mode=mode: {
                    "query": "quokka zebrafinch",
                    "mode": mode,
                    "types": ["run", "run_message", "reflection"],
                }
            ),
            OK,
        )
        for mode in ("semantic", "keyword", "hybrid")
    ],
    ("POST", "/v1/recall"): [Call(body(lambda ids: {"topic": "where does the quokka live"}), OK)],
    ("POST", "/v1/context"): [
        Call(
            body(
                lambda ids: {
                    "trigger_prompt": "tell me about the quokka",
                    "butler": "shared-butler",
                }
            ),
            OK,
        )
    ],
    ("GET", "/v1/stats"): [Call(query(lambda ids: {"scope": "shared-scope"}), OK)],
    ("DELETE", "/v1/episodes/{episode_id}"): [Call(NOTHING, NOT_FOUND, own("episode"))],
    ("DELETE", "/v1/facts/{fact_id}"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("DELETE", "/v1/rules/{rule_id}"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("DELETE", "/v1/entities/{entity_id}"): [
        Call(query(lambda ids: {"facts": "delete"}), NOT_FOUND, own("entity"))
    ],
    ("POST", "/v1/erasures"): [
        Call(body(lambda ids: {"entity_id": ids["entity"]}), NOT_FOUND),
        Call(body(lambda ids: {"tenant": True, "confirm": "tenant-a"}), {422}),
        Call(body(lambda ids: {"subject": "Quokka"}), {202}),
        Call(body(lambda ids: {"run_id": ids["run"]}), NOT_FOUND),
        Call(body(lambda ids: {"task_id": "shared-task"}), {202}),
    ],
    ("GET", "/v1/export"): [Call(NOTHING, OK)],
    ("POST", "/v1/import"): [
        Call(
            lambda ids: {
                "content": json.dumps(
                    {
                        "kind": "episode",
                        "id": ids["episode"],
                        "tenant_id": "tenant-a",
                        "butler": "x",
                        "content": "y",
                    }
                )
            },
            {422},
        ),
        Call(
            lambda ids: {
                "content": json.dumps(
                    {
                        "kind": "fact",
                        "id": "00000000-0000-4000-8000-00000000000b",
                        "subject": "x",
                        "predicate": "y",
                        "subject_key": "x",
                        "predicate_key": "y",
                        "content": "z",
                        "entity_id": ids["entity"],
                    }
                )
            },
            {422},
        ),
        Call(
            lambda ids: {
                "content": json.dumps(
                    {"kind": "episode", "id": ids["episode"], "butler": "x", "content": "y"}
                )
            },
            {409},
        ),
    ],
    ("GET", "/v1/events"): [
        Call(query(lambda ids: {"memory_id": ids["fact"]}), OK),
        Call(query(lambda ids: {"event_type": "fact_created"}), OK),
    ],
    ("POST", "/v1/runs"): [Call(body(lambda ids: {"task_id": "shared-task"}), {201})],
    ("GET", "/v1/runs"): [Call(query(lambda ids: {"task_id": "shared-task"}), OK)],
    ("POST", "/v1/runs/search"): [
        Call(body(lambda ids: {"query": "quokka run", "success": False}), OK)
    ],
    ("POST", "/v1/runs/lessons"): [
        Call(body(lambda ids: {}), OK),
        Call(body(lambda ids: {"run_id": ids["run"]}), OK),
    ],
    ("GET", "/v1/runs/{run_id}"): [Call(NOTHING, NOT_FOUND, own("run"))],
    ("DELETE", "/v1/runs/{run_id}"): [Call(NOTHING, NOT_FOUND, own("run"))],
    ("PATCH", "/v1/runs/{run_id}"): [
        Call(body(lambda ids: {"success": True}), NOT_FOUND, own("run"))
    ],
    ("POST", "/v1/runs/{run_id}/messages"): [
        Call(body(lambda ids: {"role": "human", "content": "b"}), NOT_FOUND, own("run"))
    ],
    ("POST", "/v1/runs/{run_id}/messages/batch"): [
        Call(
            body(lambda ids: {"items": [{"role": "human", "content": "b"}]}), NOT_FOUND, own("run")
        )
    ],
    ("POST", "/v1/runs/{run_id}/feedback"): [
        Call(body(lambda ids: {"source": "human", "rating": 1.0}), NOT_FOUND, own("run"))
    ],
    ("POST", "/v1/jobs/pii-scrub"): [Call(NOTHING, {202})],
    ("POST", "/v1/ledgers/{ledger_name}/events"): [
        Call(
            body(
                lambda ids: {
                    "agent_id": "alice",
                    "kind": "world.observed",
                    "content": "b sees rain",
                    "turn": 9,
                }
            ),
            {201},
            SHARED_LEDGER,
        )
    ],
    ("GET", "/v1/ledgers/{ledger_name}/events"): [Call(NOTHING, OK, SHARED_LEDGER)],
    ("GET", "/v1/ledgers/{ledger_name}/reflections"): [Call(NOTHING, OK, SHARED_LEDGER)],
    ("POST", "/v1/ledgers/{ledger_name}/agents/{agent_id}/reflections"): [
        Call(
            body(lambda ids: {"belief": "b believes", "based_on": [ids["agent_event"]]}),
            {422},
            lambda ids: {"ledger_name": "shared-ledger", "agent_id": "alice"},
        )
    ],
    ("POST", "/v1/ledgers/{ledger_name}/agents/{agent_id}/context"): [
        Call(
            body(lambda ids: {"turn": 9, "query": "quokka"}),
            OK,
            lambda ids: {"ledger_name": "shared-ledger", "agent_id": "alice"},
        )
    ],
    # B's calls run sorted by method, so its own PUT creates B's record only after the reads
    # and writes aimed at A's key found nothing.
    ("DELETE", WORKING_MEMORY): [Call(NOTHING, NOT_FOUND, shared(SHARED_SESSION))],
    ("GET", WORKING_MEMORY): [Call(NOTHING, NOT_FOUND, shared(SHARED_SESSION))],
    ("PATCH", WORKING_MEMORY): [
        Call(
            lambda ids: {
                "json": {"scratchpad": {"b": 1}},
                "headers": {"Content-Type": "application/merge-patch+json"},
            },
            NOT_FOUND,
            shared(SHARED_SESSION),
        )
    ],
    ("PUT", WORKING_MEMORY): [
        Call(body(lambda ids: {"scratchpad": {"b": "own"}}), {201}, shared(SHARED_SESSION))
    ],
    ("DELETE", SCRATCHPAD_KEY): [Call(NOTHING, NOT_FOUND, shared(SHARED_KEY))],
    ("GET", SCRATCHPAD_KEY): [Call(NOTHING, NOT_FOUND, shared(SHARED_KEY))],
    ("PUT", SCRATCHPAD_KEY): [
        Call(body(lambda ids: {"value": "b"}), {200, 404}, shared(SHARED_KEY))
    ],
    ("POST", "/v1/procedures"): [
        Call(
            body(
                lambda ids: {
                    "agent_id": "shared-agent",
                    "name": "quokka routine",
                    "steps": PROCEDURE_STEPS,
                }
            ),
            {201},
        ),
        Call(
            body(
                lambda ids: {
                    "agent_id": "b",
                    "name": "b",
                    "steps": PROCEDURE_STEPS,
                    "learned_from": [{"memory_type": "episode", "memory_id": ids["episode"]}],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/procedures"): [
        Call(query(lambda ids: {"agent_id": "shared-agent", "include_superseded": "true"}), OK)
    ],
    ("POST", "/v1/procedures/search"): [
        Call(body(lambda ids, mode=mode: {"query": "quokka routine", "mode": mode}), OK)
        for mode in ("semantic", "keyword", "hybrid")
    ],
    ("GET", "/v1/procedures/{procedure_id}"): [Call(NOTHING, NOT_FOUND, own("procedure"))],
    ("PATCH", "/v1/procedures/{procedure_id}"): [
        Call(body(lambda ids: {"status": "active"}), NOT_FOUND, own("procedure"))
    ],
    ("POST", "/v1/procedures/{procedure_id}/executions"): [
        Call(body(lambda ids: {"success": True}), NOT_FOUND, own("procedure"))
    ],
    ("POST", "/v1/procedures/{procedure_id}/versions"): [
        Call(body(lambda ids: {"steps": PROCEDURE_STEPS}), NOT_FOUND, own("procedure"))
    ],
    ("GET", "/v1/procedures/{procedure_id}/versions"): [Call(NOTHING, NOT_FOUND, own("procedure"))],
    ("POST", "/v1/jobs/arc-boundaries"): [
        Call(body(lambda ids: {"scope": "shared-butler"}), {202})
    ],
    ("POST", "/v1/arcs"): [
        Call(body(lambda ids: {"title": "b arc", "arc_type": "incident"}), {201}),
        Call(
            body(lambda ids: {"title": "b", "arc_type": "incident", "entity_ids": [ids["entity"]]}),
            {422},
        ),
        Call(
            body(
                lambda ids: {
                    "title": "b",
                    "arc_type": "incident",
                    "key_events": [{"memory_type": "episode", "memory_id": ids["episode"]}],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/arcs"): [Call(query(lambda ids: {"scope": "shared-scope"}), OK)],
    ("POST", "/v1/arcs/search"): [
        Call(body(lambda ids, mode=mode: {"query": "quokka saga", "mode": mode}), OK)
        for mode in ("semantic", "keyword", "hybrid")
    ],
    ("GET", "/v1/arcs/{arc_id}"): [Call(NOTHING, NOT_FOUND, own("arc"))],
    ("PATCH", "/v1/arcs/{arc_id}"): [
        Call(body(lambda ids: {"title": "b renames it"}), NOT_FOUND, own("arc"))
    ],
    ("POST", "/v1/arcs/{arc_id}/events"): [
        Call(
            body(lambda ids: {"memory_type": "episode", "memory_id": ids["episode"]}),
            REJECTED,
            own("arc"),
        )
    ],
    ("POST", "/v1/arcs/{arc_id}/close"): [
        Call(body(lambda ids: {"outcome": "b closes it"}), NOT_FOUND, own("arc"))
    ],
}


async def test_every_route_is_covered_by_the_isolation_test(app):
    missing = [
        f"{method} {path}" for method, path in v1_routes(app) if (method, path) not in B_REQUESTS
    ]
    assert not missing, f"add these routes to B_REQUESTS in {__file__}: {missing}"


@pytest.fixture(params=["rls", "where-clauses-only"])
def isolation(request: pytest.FixtureRequest, settings, monkeypatch) -> str:
    """Run a test with row-level security on, and with only the queries' WHERE clauses."""
    monkeypatch.setattr(settings, "row_level_security", request.param == "rls")
    return str(request.param)


async def test_tenant_b_cannot_reach_tenant_a(app, tenant_client, db_engine, isolation):
    client_a = await tenant_client("tenant-a")
    client_b = await tenant_client("tenant-b")
    ids = await seed_tenant_a(client_a)
    before = await snapshot(db_engine, "tenant-a")

    for method, path in v1_routes(app):
        for call in B_REQUESTS[(method, path)]:
            url = path.format(**call.path_ids(ids))
            request = call.build(ids)
            response = await client_b.request(method, url, **request)
            where = f"{method} {url}"
            assert response.status_code in call.allowed, (
                where,
                response.status_code,
                response.text[:300],
            )
            sent = url + json.dumps(request)
            # An id B itself sent may be echoed in an error; anything else of A's may not.
            secrets = [i for i in ids.values() if i not in sent] + list(A_WORDS)
            for secret in secrets:
                assert secret not in response.text, (where, secret)

    assert await snapshot(db_engine, "tenant-a") == before


async def test_unknown_ids_and_other_tenants_ids_answer_alike(tenant_client, isolation):
    client_a = await tenant_client("tenant-a")
    client_b = await tenant_client("tenant-b")
    ids = await seed_tenant_a(client_a)
    theirs = await client_b.get(f"/v1/facts/{ids['fact']}")
    unknown = await client_b.get("/v1/facts/00000000-0000-4000-8000-000000000000")
    assert theirs.status_code == unknown.status_code == 404
    strip = {"detail", "instance", "request_id"}  # request_id differs on every request
    assert {k: v for k, v in theirs.json().items() if k not in strip} == {
        k: v for k, v in unknown.json().items() if k not in strip
    }


async def test_stats_of_an_empty_tenant_are_zero(tenant_client, isolation):
    await seed_tenant_a(await tenant_client("tenant-a"))
    stats = (await (await tenant_client("tenant-b")).get("/v1/stats")).json()

    def numbers(value: Any) -> list[float]:
        if isinstance(value, dict):
            return [n for v in value.values() for n in numbers(v)]
        return [value] if isinstance(value, int | float) and not isinstance(value, bool) else []

    assert numbers(stats) and all(n == 0 for n in numbers(stats))
