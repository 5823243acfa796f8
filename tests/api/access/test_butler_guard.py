"""A key limited to butler beta never reads or changes butler alpha's memories, on any path.

Generated from the route table, the console's routes and the MCP tool list, as the tenancy
test is: an unlimited key of the tenant stores one of everything for butler alpha (episodes,
facts, rules, arcs, procedures, working memory, private ledger events and a reflection based
on one, links, runs, a job); then a key limited to beta calls every /v1 route, every console
page and every MCP tool aimed at those rows. Each call must answer as listed (404 for alpha's
ids, exactly like unknown ones; 403 for a write for alpha or an operation over every butler or
on a run; a tool the error of the same kind), no answer may hold any of alpha's ids or words,
and every one of alpha's rows stays as it was. A route or tool missing from the lists fails
the test. With the restrictive row-level policies dropped, the same checks, over REST and over
MCP, find leaks: the policies, not the queries, keep butlers apart.
"""

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import text

from app.core.rls import BUTLER_LIMITS, butler_policy_statements, drop_butler_policy_statements
from tests.support.butler_keys import mint_limited_key
from tests.support.console import console_client, csrf_of
from tests.support.mcp import connect
from tests.support.tenancy import NOTHING, Call, body, own, query, v1_routes

TENANT = "guarded"
HIDDEN = "alpha"
MINE = "beta"
SECRET = "alphasecret"
# Words only alpha's memories hold; beta never sends them.
HIDDEN_WORDS = (SECRET, "zebrafinch", "Rottnest", "brownfur", "politely")
FORBIDDEN = {403}
NOT_FOUND = {404}
OK = {200}
STEPS = [{"step": 1, "action": "greet"}]
HIDDEN_SESSION = {"agent_id": HIDDEN, "session_id": "s1"}
WORKING_MEMORY = "/v1/working-memory/{agent_id}/{session_id}"
SCRATCHPAD_KEY = WORKING_MEMORY + "/scratchpad/{key}"
# An id no row has.
ID = "00000000-0000-4000-8000-000000000000"

# alpha's rows, by table, as the owner reads them before and after.
HIDDEN_ROWS = {
    "episodes": f"butler = '{HIDDEN}'",
    "facts": f"scope = '{HIDDEN}'",
    "rules": f"scope = '{HIDDEN}'",
    "arcs": f"scope = '{HIDDEN}'",
    "procedures": f"agent_id = '{HIDDEN}'",
    "working_memories": f"agent_id = '{HIDDEN}'",
    "agent_events": f"agent_id = '{HIDDEN}'",
    "runs": "true",
    "run_messages": "true",
    "run_feedback": "true",
    "memory_links": "true",
    "jobs": "true",
    "passages": f"scope = '{HIDDEN}'",
    "keyword_postings": f"scope = '{HIDDEN}'",
    "fact_periods": f"fact_id IN (SELECT id FROM facts WHERE scope = '{HIDDEN}')",
    "rule_applications": f"rule_id IN (SELECT id FROM rules WHERE scope = '{HIDDEN}')",
}


def fixed(values: dict[str, str]) -> Callable[[dict[str, str]], dict[str, str]]:
    return lambda ids: values


def searches(path: str, **extra: Any) -> list[Call]:
    return [
        Call(body(lambda ids, mode=mode: {"query": "quokka zebrafinch", "mode": mode, **extra}), OK)
        for mode in ("semantic", "keyword", "hybrid")
    ]


BETA_REQUESTS: dict[tuple[str, str], list[Call]] = {
    ("POST", "/v1/episodes"): [
        Call(body(lambda ids: {"content": "b", "butler": HIDDEN}), FORBIDDEN),
        Call(body(lambda ids: {"content": "beta note", "butler": MINE}), {201}),
    ],
    ("GET", "/v1/episodes"): [
        Call(query(lambda ids: {"butler": HIDDEN, "include_expired": "true"}), OK),
        Call(NOTHING, OK),
    ],
    ("POST", "/v1/episodes/batch"): [
        Call(body(lambda ids: {"items": [{"content": "b", "butler": HIDDEN}]}), FORBIDDEN)
    ],
    ("GET", "/v1/episodes/{episode_id}"): [Call(NOTHING, NOT_FOUND, own("episode"))],
    ("POST", "/v1/episodes/{episode_id}/forget"): [Call(NOTHING, NOT_FOUND, own("episode"))],
    ("DELETE", "/v1/episodes/{episode_id}"): [Call(NOTHING, NOT_FOUND, own("episode"))],
    ("POST", "/v1/facts"): [
        Call(
            body(
                lambda ids: {
                    "subject": "Quokka",
                    "predicate": "lives_in",
                    "content": "b",
                    "scope": HIDDEN,
                }
            ),
            FORBIDDEN,
        ),
        Call(
            body(
                lambda ids: {
                    "subject": "Quokka",
                    "predicate": "lives_in",
                    "content": "beta thinks Perth",
                    "scope": MINE,
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
                    "scope": MINE,
                    "source_episode_id": ids["episode"],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/facts"): [
        Call(query(lambda ids: {"scope": HIDDEN}), OK),
        Call(query(lambda ids: {"subject": "Quokka"}), OK),
        Call(query(lambda ids: {"entity_id": ids["entity"]}), OK),
    ],
    ("GET", "/v1/facts/{fact_id}"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/facts/bulk"): [
        Call(
            body(
                lambda ids: {
                    "items": [
                        {"subject": "Quokka", "predicate": "p", "content": "b", "scope": MINE},
                        {"subject": "Quokka", "predicate": "p", "content": "b", "scope": HIDDEN},
                    ]
                }
            ),
            FORBIDDEN,
        )
    ],
    ("POST", "/v1/facts/bulk/get"): [
        Call(
            body(
                lambda ids: {
                    "items": [
                        {"id": ids["fact"]},
                        {"scope": HIDDEN, "subject": "Quokka", "predicate": "lives_in"},
                    ]
                }
            ),
            OK,
        )
    ],
    ("POST", "/v1/facts/bulk/delete"): [
        Call(
            body(
                lambda ids: {
                    "items": [
                        {"id": ids["fact"]},
                        {"scope": HIDDEN, "subject": "Quokka", "predicate": "lives_in"},
                    ]
                }
            ),
            OK,
        )
    ],
    ("GET", "/v1/facts/{fact_id}/history"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/facts/{fact_id}/confirm"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/facts/{fact_id}/contradict"): [
        Call(body(lambda ids: {"reasoning": "beta disagrees"}), NOT_FOUND, own("fact"))
    ],
    ("POST", "/v1/facts/{fact_id}/forget"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("DELETE", "/v1/facts/{fact_id}"): [Call(NOTHING, NOT_FOUND, own("fact"))],
    ("POST", "/v1/rules"): [
        Call(body(lambda ids: {"content": "b rule", "scope": HIDDEN}), FORBIDDEN),
        Call(
            body(
                lambda ids: {
                    "content": "b rule",
                    "scope": MINE,
                    "source_episode_id": ids["episode"],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/rules"): [
        Call(query(lambda ids: {"scope": HIDDEN, "include_forgotten": "true"}), OK),
        Call(NOTHING, OK),
    ],
    ("GET", "/v1/rules/{rule_id}"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/confirm"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/forget"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/helpful"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/rules/{rule_id}/harmful"): [
        Call(body(lambda ids: {"reason": "b says so"}), NOT_FOUND, own("rule"))
    ],
    ("POST", "/v1/rules/{rule_id}/invert"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("DELETE", "/v1/rules/{rule_id}"): [Call(NOTHING, NOT_FOUND, own("rule"))],
    ("POST", "/v1/jobs/consolidation"): [Call(NOTHING, FORBIDDEN)],
    ("POST", "/v1/jobs/decay"): [Call(NOTHING, FORBIDDEN)],
    ("POST", "/v1/jobs/cleanup"): [Call(body(lambda ids: {"max_entries": 0}), FORBIDDEN)],
    ("POST", "/v1/jobs/pii-scrub"): [Call(NOTHING, FORBIDDEN)],
    ("POST", "/v1/jobs/arc-boundaries"): [Call(body(lambda ids: {"scope": HIDDEN}), FORBIDDEN)],
    ("GET", "/v1/jobs"): [Call(NOTHING, OK)],
    ("GET", "/v1/jobs/{job_id}"): [Call(NOTHING, NOT_FOUND, own("job"))],
    # Entities are the tenant's shared names: beta may see and name them, not what hangs
    # off them in alpha's memories.
    ("POST", "/v1/entities"): [
        Call(body(lambda ids: {"canonical_name": "Beta Person", "entity_type": "person"}), {201})
    ],
    ("GET", "/v1/entities"): [Call(NOTHING, OK)],
    ("POST", "/v1/entities/resolve"): [Call(body(lambda ids: {"name": "Quokka"}), OK)],
    ("GET", "/v1/entities/{entity_id}"): [Call(NOTHING, OK, own("entity"))],
    ("PATCH", "/v1/entities/{entity_id}"): [
        Call(body(lambda ids: {"metadata": {"seen_by": "beta"}}), OK, own("entity"))
    ],
    ("GET", "/v1/entities/{entity_id}/facts"): [Call(NOTHING, OK, own("entity"))],
    ("DELETE", "/v1/entities/{entity_id}"): [
        Call(query(lambda ids: {"facts": "delete"}), FORBIDDEN, own("entity"))
    ],
    ("POST", "/v1/entities/{target_id}/merge"): [
        Call(body(lambda ids: {"source_id": ids["twin"]}), FORBIDDEN, own("entity", "target_id"))
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
            {404, 422},
        ),
        Call(
            body(
                lambda ids: {
                    "source_type": "entity",
                    "source_id": ids["entity"],
                    "target_type": "episode",
                    "target_id": ids["episode"],
                    "relation": "mentions",
                }
            ),
            {404, 422},
        ),
    ],
    ("GET", "/v1/links"): [
        Call(query(lambda ids: {"memory_type": "fact", "memory_id": ids["fact"]}), {200, 404}),
        Call(query(lambda ids: {"memory_type": "entity", "memory_id": ids["entity"]}), {200, 404}),
        Call(query(lambda ids: {"memory_type": "agent_event", "memory_id": ids["reflection"]}), OK),
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
                    "source_type": "agent_event",
                    "source_id": ids["reflection"],
                    "target_type": "agent_event",
                    "target_id": ids["agent_event"],
                }
            ),
            NOT_FOUND,
        ),
    ],
    ("GET", "/v1/graph/{node_type}/{node_id}"): [
        Call(NOTHING, NOT_FOUND, lambda ids: {"node_type": "fact", "node_id": ids["fact"]}),
        Call(
            query(lambda ids: {"hops": 3}),
            OK,
            lambda ids: {"node_type": "entity", "node_id": ids["entity"]},
        ),
    ],
    ("POST", "/v1/search"): searches("/v1/search")
    + searches("/v1/search", types=["episode", "fact", "rule", "run", "run_message", "reflection"])
    + [
        Call(body(lambda ids: {"query": "quokka", "scope": HIDDEN}), OK),
        Call(body(lambda ids: {"query": "quokka", "entities": [ids["entity"]]}), OK),
    ],
    ("POST", "/v1/recall"): [
        Call(body(lambda ids: {"topic": "where does the quokka live", "min_confidence": 0}), OK),
        Call(body(lambda ids: {"topic": "quokka", "scope": HIDDEN}), OK),
    ],
    ("POST", "/v1/context"): [
        Call(
            body(lambda ids: {"trigger_prompt": "tell me about the quokka", "butler": HIDDEN}), OK
        ),
        Call(body(lambda ids: {"trigger_prompt": "quokka", "butler": MINE}), OK),
    ],
    ("GET", "/v1/stats"): [Call(NOTHING, OK), Call(query(lambda ids: {"scope": HIDDEN}), OK)],
    ("POST", "/v1/erasures"): [
        Call(body(lambda ids: {"butler": HIDDEN}), FORBIDDEN),
        Call(body(lambda ids: {"butler": MINE}), FORBIDDEN),
    ],
    ("GET", "/v1/export"): [Call(NOTHING, FORBIDDEN)],
    ("POST", "/v1/import"): [
        Call(
            lambda ids: {
                "content": json.dumps({"kind": "episode", "butler": HIDDEN, "content": "y"})
            },
            FORBIDDEN,
        )
    ],
    ("GET", "/v1/events"): [
        Call(query(lambda ids: {"memory_id": ids["fact"]}), OK),
        Call(query(lambda ids: {"event_type": "fact_created"}), OK),
        Call(NOTHING, OK),
    ],
    # Runs belong to no butler: the tenant's, for unlimited keys.
    ("POST", "/v1/runs"): [Call(body(lambda ids: {"task_id": "quokka-task"}), FORBIDDEN)],
    ("GET", "/v1/runs"): [Call(NOTHING, OK)],
    ("POST", "/v1/runs/search"): [Call(body(lambda ids: {"query": "quokka run"}), OK)],
    ("POST", "/v1/runs/lessons"): [Call(body(lambda ids: {}), FORBIDDEN)],
    # Changing a run is refused before the run is looked up: the same 403 for any id.
    ("GET", "/v1/runs/{run_id}"): [Call(NOTHING, NOT_FOUND, own("run"))],
    ("PATCH", "/v1/runs/{run_id}"): [
        Call(body(lambda ids: {"success": True}), FORBIDDEN, own("run")),
        Call(body(lambda ids: {"success": True}), FORBIDDEN, fixed({"run_id": ID})),
    ],
    ("DELETE", "/v1/runs/{run_id}"): [
        Call(NOTHING, FORBIDDEN, own("run")),
        Call(NOTHING, FORBIDDEN, fixed({"run_id": ID})),
    ],
    ("POST", "/v1/runs/{run_id}/messages"): [
        Call(body(lambda ids: {"role": "human", "content": "b"}), FORBIDDEN, own("run"))
    ],
    ("POST", "/v1/runs/{run_id}/messages/batch"): [
        Call(
            body(lambda ids: {"items": [{"role": "human", "content": "b"}]}), FORBIDDEN, own("run")
        )
    ],
    ("POST", "/v1/runs/{run_id}/feedback"): [
        Call(body(lambda ids: {"source": "human", "rating": 1.0}), FORBIDDEN, own("run"))
    ],
    # A ledger's reflections consolidate into the scope named after the ledger: a limited
    # key writes only to ledgers named after its butlers, never `global` or another's.
    ("POST", "/v1/ledgers/{ledger_name}/events"): [
        Call(
            body(
                lambda ids: {
                    "agent_id": HIDDEN,
                    "kind": "world.observed",
                    "content": "b",
                    "turn": 9,
                }
            ),
            FORBIDDEN,
            fixed({"ledger_name": "village"}),
        ),
        *[
            Call(
                body(
                    lambda ids: {
                        "agent_id": MINE,
                        "kind": "world.observed",
                        "content": "b",
                        "turn": 9,
                    }
                ),
                FORBIDDEN,
                fixed({"ledger_name": name}),
            )
            for name in ("village", "global", HIDDEN)
        ],
        Call(
            body(
                lambda ids: {
                    "agent_id": MINE,
                    "kind": "world.observed",
                    "content": "beta sees rain",
                    "turn": 9,
                }
            ),
            {201},
            fixed({"ledger_name": MINE}),
        ),
    ],
    ("GET", "/v1/ledgers/{ledger_name}/events"): [
        Call(NOTHING, OK, fixed({"ledger_name": "village"})),
        Call(query(lambda ids: {"agent_id": HIDDEN}), OK, fixed({"ledger_name": "village"})),
    ],
    ("GET", "/v1/ledgers/{ledger_name}/reflections"): [
        Call(NOTHING, OK, fixed({"ledger_name": "village"}))
    ],
    ("POST", "/v1/ledgers/{ledger_name}/agents/{agent_id}/reflections"): [
        Call(
            body(lambda ids: {"belief": "b believes", "based_on": [ids["agent_event"]]}),
            FORBIDDEN,
            fixed({"ledger_name": "village", "agent_id": HIDDEN}),
        ),
        *[
            Call(
                body(lambda ids: {"belief": "b believes", "based_on": [ids["agent_event"]]}),
                FORBIDDEN,
                fixed({"ledger_name": name, "agent_id": MINE}),
            )
            for name in ("village", "global", HIDDEN)
        ],
        Call(
            body(lambda ids: {"belief": "b believes", "based_on": [ids["agent_event"]]}),
            {422},
            fixed({"ledger_name": MINE, "agent_id": MINE}),
        ),
    ],
    ("POST", "/v1/ledgers/{ledger_name}/agents/{agent_id}/context"): [
        Call(
            body(lambda ids: {"turn": 9, "query": "quokka"}),
            OK,
            fixed({"ledger_name": "village", "agent_id": HIDDEN}),
        ),
        Call(
            body(lambda ids: {"turn": 9, "query": "quokka"}),
            OK,
            fixed({"ledger_name": "village", "agent_id": MINE}),
        ),
    ],
    ("GET", WORKING_MEMORY): [Call(NOTHING, NOT_FOUND, fixed(HIDDEN_SESSION))],
    ("PUT", WORKING_MEMORY): [
        Call(body(lambda ids: {"scratchpad": {"b": 1}}), FORBIDDEN, fixed(HIDDEN_SESSION))
    ],
    ("PATCH", WORKING_MEMORY): [
        Call(
            lambda ids: {
                "json": {"scratchpad": {"b": 1}},
                "headers": {"Content-Type": "application/merge-patch+json"},
            },
            FORBIDDEN,
            fixed(HIDDEN_SESSION),
        )
    ],
    ("DELETE", WORKING_MEMORY): [Call(NOTHING, FORBIDDEN, fixed(HIDDEN_SESSION))],
    ("GET", SCRATCHPAD_KEY): [
        Call(NOTHING, NOT_FOUND, fixed({**HIDDEN_SESSION, "key": "secret-key"}))
    ],
    ("PUT", SCRATCHPAD_KEY): [
        Call(
            body(lambda ids: {"value": "b"}),
            FORBIDDEN,
            fixed({**HIDDEN_SESSION, "key": "secret-key"}),
        )
    ],
    ("DELETE", SCRATCHPAD_KEY): [
        Call(NOTHING, FORBIDDEN, fixed({**HIDDEN_SESSION, "key": "secret-key"}))
    ],
    ("POST", "/v1/procedures"): [
        Call(body(lambda ids: {"agent_id": HIDDEN, "name": "b", "steps": STEPS}), FORBIDDEN),
        Call(
            body(
                lambda ids: {
                    "agent_id": MINE,
                    "name": "b",
                    "steps": STEPS,
                    "learned_from": [{"memory_type": "episode", "memory_id": ids["episode"]}],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/procedures"): [
        Call(query(lambda ids: {"agent_id": HIDDEN, "include_superseded": "true"}), OK)
    ],
    ("POST", "/v1/procedures/search"): searches("/v1/procedures/search"),
    ("GET", "/v1/procedures/{procedure_id}"): [Call(NOTHING, NOT_FOUND, own("procedure"))],
    ("PATCH", "/v1/procedures/{procedure_id}"): [
        Call(body(lambda ids: {"status": "active"}), NOT_FOUND, own("procedure"))
    ],
    ("POST", "/v1/procedures/{procedure_id}/executions"): [
        Call(body(lambda ids: {"success": True}), NOT_FOUND, own("procedure"))
    ],
    ("POST", "/v1/procedures/{procedure_id}/versions"): [
        Call(body(lambda ids: {"steps": STEPS}), NOT_FOUND, own("procedure"))
    ],
    ("GET", "/v1/procedures/{procedure_id}/versions"): [Call(NOTHING, NOT_FOUND, own("procedure"))],
    ("POST", "/v1/arcs"): [
        Call(
            body(lambda ids: {"title": "b arc", "arc_type": "incident", "scope": HIDDEN}), FORBIDDEN
        ),
        Call(
            body(
                lambda ids: {
                    "title": "b",
                    "arc_type": "incident",
                    "scope": MINE,
                    "key_events": [{"memory_type": "episode", "memory_id": ids["episode"]}],
                }
            ),
            {422},
        ),
    ],
    ("GET", "/v1/arcs"): [Call(query(lambda ids: {"scope": HIDDEN}), OK)],
    ("POST", "/v1/arcs/search"): searches("/v1/arcs/search"),
    ("GET", "/v1/arcs/{arc_id}"): [Call(NOTHING, NOT_FOUND, own("arc"))],
    ("PATCH", "/v1/arcs/{arc_id}"): [
        Call(body(lambda ids: {"title": "b renames it"}), NOT_FOUND, own("arc"))
    ],
    ("POST", "/v1/arcs/{arc_id}/events"): [
        Call(
            body(lambda ids: {"memory_type": "episode", "memory_id": ids["episode"]}),
            {404, 422},
            own("arc"),
        )
    ],
    ("POST", "/v1/arcs/{arc_id}/close"): [
        Call(body(lambda ids: {"outcome": "b closes it"}), NOT_FOUND, own("arc"))
    ],
}

# The console, signed in with beta's key: path -> statuses (200 pages, 404 for alpha's ids,
# 403 for what needs an unlimited key). POSTs carry the page's CSRF token.
CONSOLE_GETS: dict[str, tuple[Callable[[dict[str, str]], str], set[int]]] = {
    "/ui": (lambda ids: "/ui", OK),
    "/ui/search": (lambda ids: "/ui/search?q=quokka+visit+lives", OK),
    "/ui/entities": (lambda ids: "/ui/entities", OK),
    "/ui/entities/{entity_id}": (lambda ids: f"/ui/entities/{ids['entity']}", OK),
    "/ui/entities/{entity_id}/merge": (
        lambda ids: f"/ui/entities/{ids['entity']}/merge?source_id={ids['twin']}",
        {403},
    ),
    "/ui/runs": (lambda ids: "/ui/runs", OK),
    "/ui/runs/{run_id}": (lambda ids: f"/ui/runs/{ids['run']}", NOT_FOUND),
    "/ui/agents": (lambda ids: "/ui/agents?ledger=village&agent_id=alpha", OK),
    "/ui/data": (lambda ids: "/ui/data", OK),
    "/ui/data/export": (lambda ids: "/ui/data/export", {403}),
    "/ui/erase": (lambda ids: "/ui/erase?selector=subject&value=Quokka", {403}),
    "/ui/jobs/{job_id}": (lambda ids: f"/ui/jobs/{ids['job']}", NOT_FOUND),
    "/ui/episodes/{memory_id}": (lambda ids: f"/ui/episodes/{ids['episode']}", NOT_FOUND),
    "/ui/facts/{memory_id}": (lambda ids: f"/ui/facts/{ids['fact']}", NOT_FOUND),
    "/ui/rules/{memory_id}": (lambda ids: f"/ui/rules/{ids['rule']}", NOT_FOUND),
}
CONSOLE_POSTS: dict[
    str, tuple[Callable[[dict[str, str]], tuple[str, dict[str, str]]], set[int]]
] = {
    "/ui/erase": (lambda ids: ("/ui/erase", {"selector": "subject", "value": "Quokka"}), {403}),
    "/ui/entities/{entity_id}/merge": (
        lambda ids: (f"/ui/entities/{ids['entity']}/merge", {"source_id": ids["twin"]}),
        {403},
    ),
    **{
        f"/ui/{{kind}}/{{memory_id}}/{verb}": (
            lambda ids, verb=verb: (f"/ui/facts/{ids['fact']}/{verb}", {}),
            NOT_FOUND,
        )
        for verb in ("forget", "confirm", "delete", "labels")
    },
    "/ui/rules/{memory_id}/helpful": (
        lambda ids: (f"/ui/rules/{ids['rule']}/helpful", {}),
        NOT_FOUND,
    ),
    "/ui/rules/{memory_id}/harmful": (
        lambda ids: (f"/ui/rules/{ids['rule']}/harmful", {}),
        NOT_FOUND,
    ),
}
CONSOLE_OTHER = {"/ui/sign-in", "/ui/sign-out", "/ui/static"}

# How a tool call must end: with a result, or with a tool error of this kind (the kinds
# REST answers with 403, 404 and 422), never with an error about its own arguments.
ANSWERS = None
REFUSED = "Forbidden"
UNSEEN = "Not found"
REJECTED = "Invalid input"
# MCP tool -> argument sets (ids filled in) and how each must end.
MCP_CALLS: dict[str, list[tuple[Callable[[dict[str, str]], dict[str, Any]], str | None]]] = {
    "memory_store_episode": [(lambda ids: {"content": "b", "butler": HIDDEN}, REFUSED)],
    "memory_store_fact": [
        (
            lambda ids: {"subject": "Quokka", "predicate": "p", "content": "b", "scope": HIDDEN},
            REFUSED,
        )
    ],
    "memory_store_rule": [(lambda ids: {"content": "b", "scope": HIDDEN}, REFUSED)],
    "memory_search": [
        (
            lambda ids, mode=mode: {
                "query": "quokka zebrafinch",
                "mode": mode,
                "min_confidence": 0,
            },
            ANSWERS,
        )
        for mode in ("semantic", "keyword", "hybrid")
    ],
    "memory_recall": [(lambda ids: {"topic": "quokka zebrafinch"}, ANSWERS)],
    "memory_context": [(lambda ids: {"trigger_prompt": "quokka", "butler": HIDDEN}, ANSWERS)],
    "memory_stats": [(lambda ids: {}, ANSWERS)],
    "memory_get": [
        (lambda ids, kind=kind: {"memory_type": kind, "memory_id": ids[kind]}, UNSEEN)
        for kind in ("episode", "fact", "rule")
    ],
    "memory_confirm": [(lambda ids: {"memory_type": "fact", "memory_id": ids["fact"]}, UNSEEN)],
    "memory_contradict": [(lambda ids: {"fact_id": ids["fact"], "reasoning": "b"}, UNSEEN)],
    "memory_forget": [
        (lambda ids, kind=kind: {"memory_type": kind, "memory_id": ids[kind]}, UNSEEN)
        for kind in ("episode", "fact", "rule")
    ],
    "memory_mark_helpful": [(lambda ids: {"rule_id": ids["rule"]}, UNSEEN)],
    "memory_mark_harmful": [(lambda ids: {"rule_id": ids["rule"], "reason": "b"}, UNSEEN)],
    "memory_delete": [
        (lambda ids, kind=kind: {"memory_type": kind, "memory_id": ids[kind]}, UNSEEN)
        for kind in ("episode", "fact", "rule")
    ],
    "memory_erase": [(lambda ids: {"butler": HIDDEN}, REFUSED)],
    "memory_export": [(lambda ids: {}, REFUSED)],
    "memory_run_consolidation": [(lambda ids: {}, REFUSED)],
    "memory_run_episode_cleanup": [(lambda ids: {"max_entries": 0}, REFUSED)],
    "entity_create": [
        (lambda ids: {"canonical_name": "Beta Thing", "entity_type": "other"}, ANSWERS)
    ],
    "entity_get": [(lambda ids: {"entity_id": ids["entity"]}, ANSWERS)],
    "entity_update": [
        (lambda ids: {"entity_id": ids["entity"], "metadata": {"seen_by": "beta"}}, ANSWERS)
    ],
    "entity_resolve": [(lambda ids: {"name": "Quokka"}, ANSWERS)],
    "entity_merge": [(lambda ids: {"target_id": ids["entity"], "source_id": ids["twin"]}, REFUSED)],
    "entity_delete": [(lambda ids: {"entity_id": ids["entity"], "facts": "delete"}, REFUSED)],
    "job_get": [(lambda ids: {"job_id": ids["job"]}, UNSEEN)],
    "job_list": [(lambda ids: {}, ANSWERS)],
    "run_create": [(lambda ids: {"task_id": "t"}, REFUSED)],
    "run_log_messages": [
        (
            lambda ids: {"run_id": ids["run"], "messages": [{"role": "human", "content": "b"}]},
            REFUSED,
        )
    ],
    "run_finish": [(lambda ids: {"run_id": ids["run"], "success": True}, REFUSED)],
    "run_add_feedback": [
        (lambda ids: {"run_id": ids["run"], "source": "human", "rating": 1.0}, REFUSED)
    ],
    "run_get": [(lambda ids: {"run_id": ids["run"]}, UNSEEN)],
    "run_search": [(lambda ids: {"query": "quokka run"}, ANSWERS)],
    "agent_event_append": [
        (
            lambda ids, name=name, agent=agent: {
                "ledger_name": name,
                "agent_id": agent,
                "kind": "world.observed",
                "content": "b",
                "turn": 9,
            },
            REFUSED,
        )
        for name, agent in (("village", HIDDEN), ("global", MINE), (HIDDEN, MINE))
    ],
    "agent_context": [
        (
            lambda ids: {
                "ledger_name": "village",
                "agent_id": HIDDEN,
                "turn": 9,
                "query": "quokka",
            },
            ANSWERS,
        )
    ],
    "agent_reflect": [
        (
            lambda ids: {
                "ledger_name": "village",
                "agent_id": HIDDEN,
                "belief": "b",
                "based_on": [ids["agent_event"]],
            },
            REFUSED,
        ),
        (
            lambda ids: {
                "ledger_name": "global",
                "agent_id": MINE,
                "belief": "b",
                "based_on": [ids["agent_event"]],
            },
            REFUSED,
        ),
        (
            lambda ids: {
                "ledger_name": HIDDEN,
                "agent_id": MINE,
                "belief": "b",
                "based_on": [ids["agent_event"]],
            },
            REFUSED,
        ),
        (
            lambda ids: {
                "ledger_name": MINE,
                "agent_id": MINE,
                "belief": "b",
                "based_on": [ids["agent_event"]],
            },
            REJECTED,
        ),
    ],
    "memory_store_episodes": [
        (lambda ids: {"items": [{"content": "b", "butler": HIDDEN}]}, REFUSED),
        (
            lambda ids: {
                "items": [
                    {"content": "beta turn", "butler": MINE},
                    {"content": "b", "butler": HIDDEN},
                ]
            },
            REFUSED,
        ),
    ],
    "memory_invert_rule": [(lambda ids: {"rule_id": ids["rule"]}, UNSEEN)],
    "memory_list_episodes": [
        (lambda ids: {"butler": HIDDEN, "include_expired": True}, ANSWERS),
        (lambda ids: {}, ANSWERS),
    ],
    "memory_list_facts": [
        (lambda ids: {"scope": HIDDEN}, ANSWERS),
        (lambda ids: {"subject": "Quokka", "validity": "retracted"}, ANSWERS),
        (lambda ids: {"entity_id": ids["entity"]}, ANSWERS),
    ],
    "memory_fact_history": [(lambda ids: {"fact_id": ids["fact"]}, UNSEEN)],
    "memory_list_rules": [
        (lambda ids: {"scope": HIDDEN, "include_forgotten": True}, ANSWERS),
        (lambda ids: {}, ANSWERS),
    ],
    "entity_list": [(lambda ids: {}, ANSWERS)],
    "entity_facts": [(lambda ids: {"entity_id": ids["entity"]}, ANSWERS)],
    "run_list": [(lambda ids: {}, ANSWERS)],
    "run_delete": [
        (lambda ids: {"run_id": ids["run"]}, REFUSED),
        (lambda ids: {"run_id": ID}, REFUSED),
    ],
    "run_learn_lessons": [(lambda ids: {}, REFUSED), (lambda ids: {"run_id": ids["run"]}, REFUSED)],
    "agent_event_list": [
        (lambda ids: {"ledger_name": "village"}, ANSWERS),
        (lambda ids: {"ledger_name": "village", "agent_id": HIDDEN}, ANSWERS),
    ],
    "agent_reflection_list": [
        (lambda ids: {"ledger_name": "village"}, ANSWERS),
        (lambda ids: {"ledger_name": "village", "agent_id": HIDDEN}, ANSWERS),
    ],
    "working_memory_get": [(lambda ids: HIDDEN_SESSION, UNSEEN)],
    "working_memory_set": [
        (lambda ids: {**HIDDEN_SESSION, "scratchpad": {"b": 1}}, REFUSED),
        (lambda ids: {**HIDDEN_SESSION, "scratchpad": {"b": 1}, "create_only": True}, REFUSED),
        (lambda ids: {**HIDDEN_SESSION, "scratchpad": {"b": 1}, "if_match": "*"}, REFUSED),
    ],
    "working_memory_patch": [
        (lambda ids: {**HIDDEN_SESSION, "patch": {"scratchpad": {"b": 1}}}, REFUSED)
    ],
    "working_memory_clear": [(lambda ids: HIDDEN_SESSION, REFUSED)],
    "scratchpad_get": [(lambda ids: {**HIDDEN_SESSION, "key": "secret-key"}, UNSEEN)],
    "scratchpad_set": [
        (lambda ids: {**HIDDEN_SESSION, "key": "secret-key", "value": "b"}, REFUSED)
    ],
    "scratchpad_delete": [(lambda ids: {**HIDDEN_SESSION, "key": "secret-key"}, REFUSED)],
    "procedure_store": [
        (lambda ids: {"agent_id": HIDDEN, "name": "b", "steps": STEPS}, REFUSED),
        (
            lambda ids: {
                "agent_id": MINE,
                "name": "b",
                "steps": STEPS,
                "learned_from": [{"memory_type": "episode", "memory_id": ids["episode"]}],
            },
            REJECTED,
        ),
    ],
    "procedure_get": [(lambda ids: {"procedure_id": ids["procedure"]}, UNSEEN)],
    "procedure_list": [
        (lambda ids: {"agent_id": HIDDEN, "include_superseded": True}, ANSWERS),
        (lambda ids: {"name": "quokka routine"}, ANSWERS),
    ],
    "procedure_search": [
        (lambda ids, mode=mode: {"query": "quokka routine feed", "mode": mode}, ANSWERS)
        for mode in ("semantic", "keyword", "hybrid")
    ],
    "procedure_record_execution": [
        (lambda ids: {"procedure_id": ids["procedure"], "success": True}, UNSEEN)
    ],
    "procedure_set_status": [
        (lambda ids: {"procedure_id": ids["procedure"], "status": "deprecated"}, UNSEEN)
    ],
    "procedure_new_version": [
        (lambda ids: {"procedure_id": ids["procedure"], "steps": STEPS}, UNSEEN)
    ],
    "procedure_versions": [(lambda ids: {"procedure_id": ids["procedure"]}, UNSEEN)],
    "arc_create": [
        (lambda ids: {"title": "b arc", "arc_type": "incident", "scope": HIDDEN}, REFUSED),
        (
            lambda ids: {
                "title": "b",
                "arc_type": "incident",
                "scope": MINE,
                "key_events": [{"memory_type": "episode", "memory_id": ids["episode"]}],
            },
            REJECTED,
        ),
    ],
    "arc_get": [(lambda ids: {"arc_id": ids["arc"]}, UNSEEN)],
    "arc_list": [(lambda ids: {"scope": HIDDEN}, ANSWERS), (lambda ids: {}, ANSWERS)],
    "arc_search": [
        (lambda ids, mode=mode: {"query": "quokka saga", "mode": mode}, ANSWERS)
        for mode in ("semantic", "keyword", "hybrid")
    ],
    "arc_update": [(lambda ids: {"arc_id": ids["arc"], "title": "b renames it"}, UNSEEN)],
    "arc_add_event": [
        (
            lambda ids: {
                "arc_id": ids["arc"],
                "memory_type": "episode",
                "memory_id": ids["episode"],
            },
            UNSEEN,
        )
    ],
    "arc_close": [(lambda ids: {"arc_id": ids["arc"], "outcome": "b closes it"}, UNSEEN)],
    "arc_propose": [
        (lambda ids: {"scope": HIDDEN}, REFUSED),
        (lambda ids: {"scope": MINE}, REFUSED),
    ],
    "link_create": [
        (
            lambda ids: {
                "source_type": "fact",
                "source_id": ids["fact"],
                "target_type": "episode",
                "target_id": ids["episode"],
                "relation": "supports",
            },
            REJECTED,
        ),
        (
            lambda ids: {
                "source_type": "entity",
                "source_id": ids["entity"],
                "target_type": "episode",
                "target_id": ids["episode"],
                "relation": "mentions",
            },
            REJECTED,
        ),
        (
            lambda ids: {
                "source_type": "agent_event",
                "source_id": ids["agent_event"],
                "target_type": "entity",
                "target_id": ids["entity"],
                "relation": "mentions",
            },
            REJECTED,
        ),
    ],
    "link_list": [
        (lambda ids: {"memory_type": "fact", "memory_id": ids["fact"]}, UNSEEN),
        (lambda ids: {"memory_type": "episode", "memory_id": ids["episode"]}, UNSEEN),
        (lambda ids: {"memory_type": "entity", "memory_id": ids["entity"]}, ANSWERS),
        (lambda ids: {"memory_type": "agent_event", "memory_id": ids["agent_event"]}, UNSEEN),
        (lambda ids: {"memory_type": "agent_event", "memory_id": ids["reflection"]}, ANSWERS),
    ],
    "link_delete": [
        (
            lambda ids: {
                "source_type": "fact",
                "source_id": ids["fact"],
                "target_type": "episode",
                "target_id": ids["episode"],
            },
            UNSEEN,
        ),
        (
            lambda ids: {
                "source_type": "agent_event",
                "source_id": ids["reflection"],
                "target_type": "agent_event",
                "target_id": ids["agent_event"],
            },
            UNSEEN,
        ),
    ],
    "graph_neighbourhood": [
        (lambda ids, kind=kind: {"node_type": kind, "node_id": ids[kind]}, UNSEEN)
        for kind in ("fact", "episode", "rule")
    ]
    + [(lambda ids: {"node_type": "entity", "node_id": ids["entity"], "hops": 3}, ANSWERS)],
}


async def seed_alpha(owner: Any) -> dict[str, str]:
    """One of everything of butler alpha, stored with an unlimited key; alpha's ids by kind."""

    async def post(path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        response = await owner.post(path, json=payload)
        assert response.status_code in (200, 201, 202), (path, response.text)
        return response.json()

    entity = await post(
        "/v1/entities", {"canonical_name": "Quokka Person", "entity_type": "person"}
    )
    twin = await post("/v1/entities", {"canonical_name": "Quokka Twin", "entity_type": "person"})
    episode = await post(
        "/v1/episodes", {"content": f"quokka zebrafinch visit {SECRET}", "butler": HIDDEN}
    )
    fact = await post(
        "/v1/facts",
        {
            "subject": "Quokka",
            "predicate": "lives_in",
            "content": f"The quokka lives on Rottnest {SECRET}",
            "entity_id": entity["id"],
            "scope": HIDDEN,
        },
    )
    rule = await post(
        "/v1/rules", {"content": f"Mention the quokka politely {SECRET}", "scope": HIDDEN}
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
    await post(
        "/v1/links",
        {
            "source_type": "entity",
            "source_id": entity["id"],
            "target_type": "episode",
            "target_id": episode["id"],
            "relation": "mentions",
        },
    )
    job = await post("/v1/jobs/decay")
    run = await post(
        "/v1/runs",
        {"task_id": "quokka-task", "success": False, "summary": f"quokka run zebrafinch {SECRET}"},
    )
    await post(
        f"/v1/runs/{run['id']}/messages", {"role": "critic", "content": f"quokka brownfur {SECRET}"}
    )
    await post(
        f"/v1/runs/{run['id']}/feedback",
        {"source": "critic", "rating": 0.1, "rationale": f"politely {SECRET}"},
    )
    event = await post(
        "/v1/ledgers/village/events",
        {
            "agent_id": HIDDEN,
            "kind": "world.observed",
            "turn": 1,
            "visibility": "private",
            "content": f"quokka Rottnest {SECRET}",
        },
    )
    response = await owner.put(
        f"/v1/working-memory/{HIDDEN}/s1", json={"scratchpad": {"secret-key": SECRET}}
    )
    assert response.status_code == 201, response.text
    procedure = await post(
        "/v1/procedures",
        {
            "agent_id": HIDDEN,
            "name": "quokka routine",
            "steps": STEPS,
            "description": f"Feed the quokka politely {SECRET}",
            "learned_from": [{"memory_type": "episode", "memory_id": episode["id"]}],
        },
    )
    arc = await post(
        "/v1/arcs",
        {
            "title": f"The quokka saga {SECRET}",
            "arc_type": "incident",
            "scope": HIDDEN,
            "entity_ids": [entity["id"]],
            "key_events": [{"memory_type": "episode", "memory_id": episode["id"]}],
        },
    )
    # A reflection is visible to every agent; the private event it is based on is not.
    reflection = await post(
        f"/v1/ledgers/village/agents/{HIDDEN}/reflections",
        {"belief": "the quokka seems content", "based_on": [event["id"]]},
    )
    assert reflection["based_on"] == [event["id"]], reflection
    return {
        "entity": entity["id"],
        "twin": twin["id"],
        "episode": episode["id"],
        "fact": fact["id"],
        "rule": rule["id"],
        "job": job["id"],
        "run": run["id"],
        "agent_event": event["id"],
        "procedure": procedure["id"],
        "arc": arc["id"],
        "reflection": reflection["id"],
    }


# Entities and reflections are shared: their ids may show; everything else of alpha's may not.
SHARED_KINDS = ("entity", "twin", "reflection")


def leaks_in(answer: str, sent: str, ids: dict[str, str]) -> list[str]:
    """alpha's ids (other than those sent) and words found in an answer."""
    secrets = [i for kind, i in ids.items() if kind not in SHARED_KINDS and i not in sent]
    return [secret for secret in (*secrets, *HIDDEN_WORDS) if secret in answer]


async def hidden_rows(db_engine: Any) -> dict[str, list[dict[str, Any]]]:
    """alpha's rows (and every run, link and job), table by table, read as the owner."""
    rows: dict[str, list[dict[str, Any]]] = {}
    async with db_engine.connect() as conn:
        for table, where in HIDDEN_ROWS.items():
            result = await conn.execute(
                text(f"SELECT * FROM {table} WHERE tenant_id = :t AND {where} ORDER BY 1"),
                {"t": TENANT},
            )
            rows[table] = [dict(row) for row in result.mappings()]
    return rows


def console_routes(app: Any) -> set[str]:
    """The path templates of the console's routes."""
    return {route.path for route in app.routes if getattr(route, "path", "").startswith("/ui")}


async def http_problems(app: Any, beta: Any, ids: dict[str, str]) -> list[str]:
    """Every /v1 call of beta that answered otherwise than listed or showed alpha's rows."""
    problems = []
    for method, path in v1_routes(app):
        for call in BETA_REQUESTS[(method, path)]:
            url = path.format(**call.path_ids(ids))
            request = call.build(ids)
            response = await beta.request(method, url, **request)
            where = f"{method} {url} {json.dumps(request)[:120]}"
            if response.status_code not in call.allowed:
                problems.append(f"{where}: {response.status_code} {response.text[:200]}")
            if response.status_code == 403 and not response.headers["content-type"].startswith(
                "application/problem+json"
            ):
                problems.append(f"{where}: 403 is not problem+json")
            problems += [
                f"{where}: shows {leak}"
                for leak in leaks_in(response.text, url + json.dumps(request), ids)
            ]
    return problems


async def console_problems(app: Any, secret: str, ids: dict[str, str]) -> list[str]:
    """Every console page or form of beta's session that answered otherwise than listed or
    showed alpha's rows."""
    problems = []
    http = await console_client(app, secret)
    try:
        overview = await http.get("/ui")
        if f"limited to {MINE}" not in overview.text:
            problems.append("/ui: the header does not show the key's butlers")
        for url_of, allowed in CONSOLE_GETS.values():
            url = url_of(ids)
            response = await http.get(url)
            if response.status_code not in allowed:
                problems.append(f"GET {url}: {response.status_code}")
            problems += [f"GET {url}: shows {leak}" for leak in leaks_in(response.text, url, ids)]
        csrf = csrf_of(overview.text)
        for form_of, allowed in CONSOLE_POSTS.values():
            url, fields = form_of(ids)
            response = await http.post(url, data={"csrf_token": csrf, **fields})
            if response.status_code not in allowed:
                problems.append(f"POST {url}: {response.status_code}")
            problems += [f"POST {url}: shows {leak}" for leak in leaks_in(response.text, url, ids)]
    finally:
        await http.aclose()
    return problems


@asynccontextmanager
async def policies_dropped(db_engine: Any) -> AsyncIterator[None]:
    """Without the butler policies for the block (as the owner); put back afterwards."""
    async with db_engine.begin() as conn:
        for table in BUTLER_LIMITS:
            for statement in drop_butler_policy_statements(table):
                await conn.execute(text(statement))
    try:
        yield
    finally:
        async with db_engine.begin() as conn:
            for table in BUTLER_LIMITS:
                for statement in butler_policy_statements(table):
                    await conn.execute(text(statement))


async def test_every_route_tool_and_page_is_covered_by_the_guard(app):
    missing = [
        f"{method} {path}" for method, path in v1_routes(app) if (method, path) not in BETA_REQUESTS
    ]
    assert not missing, f"add these routes to BETA_REQUESTS in {__file__}: {missing}"
    known = set(CONSOLE_GETS) | set(CONSOLE_POSTS) | CONSOLE_OTHER
    assert console_routes(app) <= known, (
        f"add these console routes to {__file__}: {console_routes(app) - known}"
    )
    from app.mcp.server import build_server  # the tool list, without a live server

    names = {tool.name for tool in await build_server("guard").list_tools()}
    assert names == set(MCP_CALLS), (
        f"add these MCP tools to MCP_CALLS in {__file__}: {names - set(MCP_CALLS)}"
    )


async def test_a_key_limited_to_beta_never_reaches_alphas_rows(
    app, tenant_client, limited_client, db_engine
):
    ids = await seed_alpha(await tenant_client(TENANT))
    before = await hidden_rows(db_engine)
    beta = await limited_client(TENANT, [MINE])

    assert await http_problems(app, beta, ids) == []
    secret = await mint_limited_key(app, TENANT, [MINE])
    assert await console_problems(app, secret, ids) == []
    assert await hidden_rows(db_engine) == before


async def mcp_problems(url: str, secret: str, ids: dict[str, str]) -> list[str]:
    """Every MCP tool call of beta's key that failed or succeeded otherwise than listed or
    showed alpha's rows."""
    problems = []
    async with connect(url, {"Authorization": f"Bearer {secret}"}) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == set(MCP_CALLS)
        for tool, calls in MCP_CALLS.items():
            for arguments_of, expected in calls:
                arguments = arguments_of(ids)
                result = await client.call_tool(tool, arguments)
                answer = " ".join(getattr(block, "text", "") for block in result.content)
                error = answer.removeprefix(f"Error executing tool {tool}: ")
                if result.is_error != (expected is not None) or (
                    expected is not None and not error.startswith(expected)
                ):
                    problems.append(
                        f"{tool} {arguments}: expected {expected}, got "
                        f"error={result.is_error} {answer[:200]}"
                    )
                problems += [
                    f"{tool}: shows {leak}" for leak in leaks_in(answer, json.dumps(arguments), ids)
                ]
    return problems


async def test_every_mcp_tool_keeps_a_limited_key_to_its_butlers(
    app, tenant_client, mcp_url, db_engine
):
    ids = await seed_alpha(await tenant_client(TENANT))
    before = await hidden_rows(db_engine)
    secret = await mint_limited_key(app, TENANT, [MINE])
    assert await mcp_problems(mcp_url, secret, ids) == []
    assert await hidden_rows(db_engine) == before


async def test_without_the_row_policies_the_guard_finds_leaks(
    app, tenant_client, limited_client, db_engine
):
    ids = await seed_alpha(await tenant_client(TENANT))
    beta = await limited_client(TENANT, [MINE])
    async with policies_dropped(db_engine):
        problems = await http_problems(app, beta, ids)
    # alpha's rows show, and reads and deletes by id reach them.
    assert any(f"shows {SECRET}" in problem for problem in problems), problems
    assert any(
        problem.startswith(f"DELETE /v1/episodes/{ids['episode']}") for problem in problems
    ), problems


async def test_without_the_row_policies_the_mcp_guard_finds_leaks(
    app, tenant_client, mcp_url, db_engine
):
    ids = await seed_alpha(await tenant_client(TENANT))
    secret = await mint_limited_key(app, TENANT, [MINE])
    async with policies_dropped(db_engine):
        problems = await mcp_problems(mcp_url, secret, ids)
    # The tools mirroring the REST routes reach alpha's working memory, procedures, arcs,
    # private ledger events and links as soon as the policies are gone.
    for tool in (
        "working_memory_get",
        "procedure_get",
        "arc_get",
        "agent_event_list",
        "link_list",
        "graph_neighbourhood",
        "memory_fact_history",
    ):
        assert any(problem.startswith(f"{tool}") for problem in problems), (tool, problems)
    assert any(f"shows {SECRET}" in problem for problem in problems), problems


@pytest.fixture(autouse=True)
def _no_llm(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No LLM: appending ledger events queues no reflection job."""
    monkeypatch.setattr(settings.llm, "base_url", None)
