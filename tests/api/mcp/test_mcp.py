"""MCP at /mcp, driven by the SDK's own client over real HTTP against a live server."""

import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from app.core.config import Settings
from app.main import create_app
from app.worker import worker
from tests.support.employer_history import BELIEVED_BEFORE_CORRECTION, HELD, STORE_ORDER
from tests.support.jobs import job_context
from tests.support.live_server import serve_in_thread
from tests.support.mcp import (
    ALL_TOOLS,
    BELIEF_TOOLS,
    DATA_TOOLS,
    JOB_TOOLS,
    MORE_TOOLS,
    RUN_TOOLS,
    connect,
    error_text,
    ok,
)
from tests.support.paths import REPO_ROOT


async def test_list_tools_returns_the_spec_tools_and_the_others(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        listed = (await client.list_tools()).tools
    assert {tool.name for tool in listed} == ALL_TOOLS
    assert len(listed) == (
        19 + len(RUN_TOOLS) + len(JOB_TOOLS) + len(DATA_TOOLS) + len(MORE_TOOLS) + len(BELIEF_TOOLS)
    )
    assert len(listed) == 75
    assert all(tool.description and len(tool.description) > 60 for tool in listed)


def assert_json_memory(memory: dict[str, Any]) -> None:
    """Results serialise UUIDs as strings, times in ISO 8601 with a zone, no vectors."""
    uuid.UUID(memory["id"])
    assert datetime.fromisoformat(memory["created_at"]).tzinfo is not None
    assert not {"embedding", "search_vector"} & set(memory)


async def test_episodes_stored_without_a_session_id_share_an_inferred_one(
    mcp_as: Any, inferred_sessions: float
) -> None:
    async with mcp_as("acme") as client:
        first, second = [
            ok(
                await client.call_tool(
                    "memory_store_episode", {"content": content, "butler": "mcp-sessions"}
                )
            )
            for content in ("Ann: is the train on time?", "Bo: ten minutes late")
        ]
        [batched] = ok(
            await client.call_tool(
                "memory_store_episodes",
                {"items": [{"content": "Ann: thanks", "butler": "mcp-sessions"}]},
            )
        )["items"]
    assert first["session_id"] is None and first["inferred_session"] is not None
    assert second["inferred_session"] == batched["inferred_session"] == first["inferred_session"]


async def test_store_tools_return_json_memories(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        episode = ok(
            await client.call_tool(
                "memory_store_episode",
                {
                    "content": "Ann booked the train to Lyon",
                    "butler": "travel",
                    "session_id": str(uuid.uuid4()),
                },
            )
        )
        fact = ok(
            await client.call_tool(
                "memory_store_fact",
                {
                    "subject": "Ann",
                    "predicate": "favourite colour",
                    "content": "Ann likes green",
                    "permanence": "stable",
                    "tags": ["prefs"],
                },
            )
        )
        rule = ok(
            await client.call_tool(
                "memory_store_rule",
                {"content": "Confirm the date before booking", "scope": "travel"},
            )
        )
    for memory in (episode, fact, rule):
        assert_json_memory(memory)
    assert episode["butler"] == "travel" and episode["importance"] == 5.0
    assert (fact["validity"], fact["scope"], fact["tags"]) == ("active", "global", ["prefs"])
    assert fact["decay_rate"] == 0.002
    assert (rule["maturity"], rule["scope"]) == ("candidate", "travel")


async def test_store_tools_drop_nul_from_text(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        episode = ok(
            await client.call_tool(
                "memory_store_episode",
                {"content": "Ann booked\x00 the train", "butler": "tra\x00vel"},
            )
        )
        fact = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "A\x00nn", "predicate": "city", "content": "Ann lives\x00 in Lyon"},
            )
        )
        rule = ok(await client.call_tool("memory_store_rule", {"content": "Be\x00 brief"}))
    assert (episode["content"], episode["butler"]) == ("Ann booked the train", "travel")
    assert (fact["subject"], fact["content"]) == ("Ann", "Ann lives in Lyon")
    assert rule["content"] == "Be brief"


async def test_store_fact_with_the_same_key_supersedes(mcp_as: Any, sql: Any) -> None:
    async with mcp_as("acme") as client:
        old = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Ann", "predicate": "city", "content": "Ann lives in Paris"},
            )
        )
        new = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Ann", "predicate": "city", "content": "Ann lives in Lyon"},
            )
        )
    assert new["supersedes_id"] == old["id"]
    [row] = await sql("SELECT validity FROM facts WHERE id = :id", id=uuid.UUID(old["id"]))
    assert row["validity"] == "superseded"


async def test_get_confirm_and_forget_act_on_one_memory(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        fact = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Ann", "predicate": "pet", "content": "Ann has a cat"},
            )
        )
        episode = ok(
            await client.call_tool(
                "memory_store_episode", {"content": "Ann mentioned her cat", "butler": "chat"}
            )
        )
        read = ok(
            await client.call_tool("memory_get", {"memory_type": "fact", "memory_id": fact["id"]})
        )
        confirmed = ok(
            await client.call_tool(
                "memory_confirm", {"memory_type": "fact", "memory_id": fact["id"]}
            )
        )
        forgotten = ok(
            await client.call_tool(
                "memory_forget", {"memory_type": "fact", "memory_id": fact["id"]}
            )
        )
        expired = ok(
            await client.call_tool(
                "memory_forget", {"memory_type": "episode", "memory_id": episode["id"]}
            )
        )
        refused = error_text(
            await client.call_tool(
                "memory_confirm", {"memory_type": "episode", "memory_id": episode["id"]}
            )
        )
    assert (read["id"], read["reference_count"]) == (fact["id"], 1)
    assert confirmed["last_confirmed_at"] > fact["last_confirmed_at"]
    assert forgotten["validity"] == "retracted"
    assert datetime.fromisoformat(expired["expires_at"]) <= datetime.now(UTC)
    assert "memory_type" in refused and "cannot be confirmed" in refused


async def test_contradict_halves_a_facts_confidence_and_counts(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        fact = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Globex", "predicate": "office", "content": "Globex is in Denver"},
            )
        )
        contradicted = ok(
            await client.call_tool(
                "memory_contradict", {"fact_id": fact["id"], "reasoning": "they moved to Boulder"}
            )
        )
        missing = error_text(
            await client.call_tool("memory_contradict", {"fact_id": str(uuid.uuid4())})
        )
    assert (contradicted["confidence"], contradicted["contradiction_count"]) == (0.5, 1)
    assert "not found" in missing


async def test_rule_feedback_tools_count_applications(mcp_as: Any, sql: Any) -> None:
    async with mcp_as("acme") as client:
        rule = ok(await client.call_tool("memory_store_rule", {"content": "Answer briefly"}))
        helped = ok(
            await client.call_tool(
                "memory_mark_helpful", {"rule_id": rule["id"], "context": {"task": "summary"}}
            )
        )
        harmed = ok(
            await client.call_tool(
                "memory_mark_harmful",
                {"rule_id": rule["id"], "reason": "too terse for a legal question"},
            )
        )
        got = ok(
            await client.call_tool("memory_get", {"memory_type": "rule", "memory_id": rule["id"]})
        )
    assert (helped["applied_count"], helped["success_count"]) == (1, 1)
    assert helped["effectiveness_score"] == 1.0
    assert (harmed["applied_count"], harmed["harmful_count"]) == (2, 1)
    assert harmed["effectiveness_score"] == pytest.approx(1 / (1 + 4 + 0.01))
    reasons = await sql(
        "SELECT outcome, reason FROM rule_applications WHERE rule_id = :id ORDER BY created_at",
        id=uuid.UUID(rule["id"]),
    )
    assert [(r["outcome"], r["reason"]) for r in reasons] == [
        ("helpful", None),
        ("harmful", "too terse for a legal question"),
    ]
    assert got["harmful_count"] == 1
    for shown in (harmed, got):
        assert shown["metadata"] == {"harmful_reasons": ["too terse for a legal question"]}


async def test_retrieval_tools_find_what_was_stored(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        fact = ok(
            await client.call_tool(
                "memory_store_fact",
                {
                    "subject": "Ann",
                    "predicate": "allergy",
                    "content": "Ann is allergic to peanuts",
                    "importance": 9.0,
                },
            )
        )
        rule = ok(
            await client.call_tool(
                "memory_store_rule", {"content": "Check allergies before suggesting a restaurant"}
            )
        )
        found = ok(
            await client.call_tool(
                "memory_search", {"query": "peanut allergy", "types": ["fact"], "limit": 5}
            )
        )
        recalled = ok(await client.call_tool("memory_recall", {"topic": "Ann allergies"}))
        context = ok(
            await client.call_tool(
                "memory_context",
                {
                    "trigger_prompt": "Suggest a restaurant for Ann",
                    "butler": "food",
                    "token_budget": 500,
                },
            )
        )
        stats = ok(await client.call_tool("memory_stats", {}))
    assert found["mode"] == "hybrid"
    assert [hit["id"] for hit in found["results"]] == [fact["id"]]
    assert {hit["id"] for hit in recalled["results"]} == {fact["id"], rule["id"]}
    assert context["context"].startswith("# Memory Context\n")
    assert "Ann is allergic to peanuts" in context["context"]
    assert context["characters"] <= 500 * 4
    assert (stats["facts"]["active"], stats["rules"]["candidate"]) == (1, 1)


async def test_search_and_recall_tools_boost_memories_near_an_entity(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        acme = ok(
            await client.call_tool(
                "entity_create", {"canonical_name": "Acme", "entity_type": "organization"}
            )
        )
        moving = ok(
            await client.call_tool(
                "memory_store_fact",
                {
                    "subject": "Acme",
                    "predicate": "moves_office",
                    "entity_id": acme["id"],
                    "content": "Acme moves to a new building in March",
                },
            )
        )
        kitchen = ok(
            await client.call_tool(
                "memory_store_fact",
                {
                    "subject": "office",
                    "predicate": "kitchen",
                    "content": "The office kitchen gets a new coffee machine",
                },
            )
        )
        query = "coffee machine in the office kitchen"
        plain = ok(await client.call_tool("memory_search", {"query": query, "types": ["fact"]}))
        boosted = ok(
            await client.call_tool(
                "memory_search",
                {"query": query, "types": ["fact"], "entities": [acme["id"]], "graph_hops": 1},
            )
        )
        recalled = ok(
            await client.call_tool(
                "memory_recall", {"topic": "office move", "entities": [acme["id"]]}
            )
        )
    assert plain["results"][0]["id"] == kitchen["id"]
    assert boosted["results"][0]["id"] == moving["id"]
    assert boosted["results"][0]["graph"]["hops"] == 1
    assert recalled["results"][0]["id"] == moving["id"]


async def test_entity_tools_create_update_resolve_and_merge(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        ann = ok(
            await client.call_tool(
                "entity_create",
                {"canonical_name": "Ann Smith", "entity_type": "person", "aliases": ["Annie"]},
            )
        )
        duplicate = ok(
            await client.call_tool(
                "entity_create",
                {
                    "canonical_name": "A. Smith",
                    "entity_type": "person",
                    "tenant_id": "acme",
                    "metadata": {"source": "email"},
                },
            )
        )
        fact = ok(
            await client.call_tool(
                "memory_store_fact",
                {
                    "subject": "A. Smith",
                    "predicate": "employer",
                    "content": "Works at Acme",
                    "entity_id": duplicate["id"],
                },
            )
        )
        read = ok(await client.call_tool("entity_get", {"entity_id": ann["id"]}))
        updated = ok(
            await client.call_tool(
                "entity_update",
                {"entity_id": ann["id"], "aliases": ["Annie", "Ann S."], "metadata": {"team": "x"}},
            )
        )
        resolved = ok(await client.call_tool("entity_resolve", {"name": "annie"}))
        merged = ok(
            await client.call_tool(
                "entity_merge", {"target_id": ann["id"], "source_id": duplicate["id"]}
            )
        )
        moved = ok(
            await client.call_tool("memory_get", {"memory_type": "fact", "memory_id": fact["id"]})
        )
    assert read == ann
    assert (updated["aliases"], updated["metadata"]) == (["Annie", "Ann S."], {"team": "x"})
    assert [(c["entity_id"], c["name_match"]) for c in resolved["candidates"]] == [
        (ann["id"], "alias")
    ]
    assert (merged["facts_repointed"], merged["aliases_added"]) == (1, ["A. Smith"])
    assert merged["target"]["metadata"] == {"team": "x", "source": "email"}
    assert moved["entity_id"] == ann["id"]


async def test_job_tools_queue_the_jobs_rest_lists(
    mcp_as: Any,
    tenant_client: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> None:
    async with mcp_as("acme") as client:
        consolidation = ok(await client.call_tool("memory_run_consolidation", {}))
        cleanup = ok(await client.call_tool("memory_run_episode_cleanup", {}))
        small = ok(await client.call_tool("memory_run_episode_cleanup", {"max_entries": 50}))
    assert (consolidation["kind"], consolidation["status"]) == ("consolidation", "queued")
    assert (cleanup["kind"], cleanup["params"]) == ("cleanup", {"max_entries": 10000})
    assert small["params"] == {"max_entries": 50}
    rest = await tenant_client("acme")
    listed = (await rest.get("/v1/jobs")).json()["items"]
    assert {job["id"] for job in listed} == {consolidation["id"], cleanup["id"], small["id"]}


async def test_job_tools_follow_a_queued_job_to_its_result(
    mcp_as: Any,
    app: Any,
    settings: Settings,
    tenant_client: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> None:
    async with mcp_as("acme") as client:
        queued = ok(await client.call_tool("memory_run_episode_cleanup", {"max_entries": 5}))
        consolidation = ok(await client.call_tool("memory_run_consolidation", {}))
        waiting = ok(await client.call_tool("job_get", {"job_id": queued["id"]}))
        await worker.drain(job_context(app, settings))
        done = ok(await client.call_tool("job_get", {"job_id": queued["id"]}))
        first = ok(await client.call_tool("job_list", {"limit": 1}))
        second = ok(
            await client.call_tool("job_list", {"limit": 1, "cursor": first["next_cursor"]})
        )
        cleanups = ok(await client.call_tool("job_list", {"kind": "cleanup"}))
    async with mcp_as("other") as stranger:
        hidden = error_text(await stranger.call_tool("job_get", {"job_id": queued["id"]}))
    assert waiting["status"] == "queued"
    assert (done["status"], done["kind"]) == ("succeeded", "cleanup")
    rest = await tenant_client("acme")
    assert done == (await rest.get(f"/v1/jobs/{queued['id']}")).json()
    assert done["result"] is not None and done["finished_at"] is not None
    assert [job["id"] for job in first["items"]] == [consolidation["id"]]
    assert [job["id"] for job in second["items"]] == [queued["id"]]
    assert second["next_cursor"] is None
    assert [job["id"] for job in cleanups["items"]] == [queued["id"]]
    assert "not found" in hidden


async def test_delete_tools_delete_for_good(
    mcp_as: Any,
    tenant_client: Callable[[str], Awaitable[httpx.AsyncClient]],
    sql: Any,
) -> None:
    async with mcp_as("acme") as client:
        old = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Ann", "predicate": "city", "content": "Ann lives in Paris"},
            )
        )
        new = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Ann", "predicate": "city", "content": "Ann lives in Lyon"},
            )
        )
        episode = ok(
            await client.call_tool(
                "memory_store_episode", {"content": "Ann said she moved", "butler": "chat"}
            )
        )
        rule = ok(await client.call_tool("memory_store_rule", {"content": "Ask before moving"}))
        ann = ok(
            await client.call_tool(
                "entity_create", {"canonical_name": "Ann", "entity_type": "person"}
            )
        )
        async with mcp_as("other") as stranger:
            refused = error_text(
                await stranger.call_tool(
                    "memory_delete", {"memory_type": "fact", "memory_id": new["id"]}
                )
            )
        fact_gone = ok(
            await client.call_tool("memory_delete", {"memory_type": "fact", "memory_id": new["id"]})
        )
        episode_gone = ok(
            await client.call_tool(
                "memory_delete", {"memory_type": "episode", "memory_id": episode["id"]}
            )
        )
        rule_gone = ok(
            await client.call_tool(
                "memory_delete", {"memory_type": "rule", "memory_id": rule["id"]}
            )
        )
        entity_gone = ok(await client.call_tool("entity_delete", {"entity_id": ann["id"]}))
        again = error_text(
            await client.call_tool("memory_delete", {"memory_type": "fact", "memory_id": old["id"]})
        )
    assert "not found" in refused
    assert (fact_gone["type"], fact_gone["id"], fact_gone["deleted"]["facts"]) == (
        "fact",
        new["id"],
        2,
    )
    assert (episode_gone["deleted"]["episodes"], rule_gone["deleted"]["rules"]) == (1, 1)
    assert (entity_gone["type"], entity_gone["deleted"]["entities"]) == ("entity", 1)
    assert "not found" in again  # the whole history went with the newest version
    rest = await tenant_client("acme")
    for path in (
        f"/v1/facts/{old['id']}",
        f"/v1/episodes/{episode['id']}",
        f"/v1/rules/{rule['id']}",
        f"/v1/entities/{ann['id']}",
    ):
        assert (await rest.get(path)).status_code == 404, path
    assert [
        row["event_type"]
        for row in await sql(
            "SELECT event_type FROM memory_events WHERE event_type LIKE '%_deleted' "
            "ORDER BY created_at"
        )
    ] == ["fact_deleted", "episode_deleted", "rule_deleted", "entity_deleted"]


async def test_erase_tool_confirms_a_tenant_erasure_as_rest_does(
    mcp_as: Any,
    app: Any,
    settings: Settings,
    tenant_client: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> None:
    async with mcp_as("acme") as client:
        ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Ann", "predicate": "city", "content": "Ann lives in Lyon"},
            )
        )
        kept = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "Bob", "predicate": "city", "content": "Bob lives in Nice"},
            )
        )
        unconfirmed = error_text(await client.call_tool("memory_erase", {"tenant": True}))
        misspelt = error_text(
            await client.call_tool("memory_erase", {"tenant": True, "confirm": "acme2"})
        )
        by_subject = ok(await client.call_tool("memory_erase", {"subject": "ann"}))
        await worker.drain(job_context(app, settings))
        receipt = ok(await client.call_tool("job_get", {"job_id": by_subject["id"]}))
        everything = ok(await client.call_tool("memory_erase", {"tenant": True, "confirm": "acme"}))
    assert "confirm" in unconfirmed and "confirm" in misspelt
    assert (by_subject["kind"], by_subject["status"]) == ("erasure", "queued")
    assert (receipt["status"], receipt["result"]["deleted"]["facts"]) == ("succeeded", 1)
    rest = await tenant_client("acme")
    facts = (await rest.get("/v1/facts")).json()["items"]
    assert [fact["id"] for fact in facts] == [kept["id"]]
    assert everything["params"] == {"tenant": True}


async def test_export_tool_pages_through_the_rest_export(
    mcp_as: Any,
    tenant_client: Callable[[str], Awaitable[httpx.AsyncClient]],
) -> None:
    async with mcp_as("acme") as client:
        for number in range(3):
            ok(
                await client.call_tool(
                    "memory_store_episode", {"content": f"observation {number}", "butler": "chat"}
                )
            )
        ok(await client.call_tool("memory_store_rule", {"content": "Be brief"}))
        pages = [ok(await client.call_tool("memory_export", {"limit": 2}))]
        while pages[-1]["next_cursor"] is not None:
            pages.append(
                ok(
                    await client.call_tool(
                        "memory_export", {"limit": 2, "cursor": pages[-1]["next_cursor"]}
                    )
                )
            )
        whole = ok(await client.call_tool("memory_export", {}))
    rest = await tenant_client("acme")
    streamed = [json.loads(line) for line in (await rest.get("/v1/export")).text.splitlines()]
    assert [record for page in pages for record in page["records"]] == streamed
    assert whole == {"records": streamed, "next_cursor": None}
    assert [len(page["records"]) for page in pages] == [2, 2]
    assert {record["kind"] for record in streamed} == {"episode", "rule"}


SOME_ID = str(uuid.uuid4())
# One bad argument per tool; the error must name it.
BAD_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_store_episode", {"content": "x", "butler": "b", "importance": 11}, "importance"),
    (
        "memory_store_fact",
        {"subject": "s", "predicate": "p", "content": "c", "permanence": "forever"},
        "permanence",
    ),
    ("memory_store_rule", {"content": "   "}, "content"),
    ("memory_search", {"query": "q", "limit": 0}, "limit"),
    ("memory_recall", {"topic": "t", "limit": 101}, "limit"),
    ("memory_get", {"memory_type": "note", "memory_id": SOME_ID}, "memory_type"),
    ("memory_context", {"trigger_prompt": "t", "butler": "b", "token_budget": 5}, "token_budget"),
    ("memory_stats", {"scope": ""}, "scope"),
    ("memory_confirm", {"memory_type": "fact", "memory_id": "not-a-uuid"}, "memory_id"),
    ("memory_mark_helpful", {"rule_id": SOME_ID, "context": {"deep": "\x00"}}, "context"),
    ("memory_mark_harmful", {"rule_id": SOME_ID, "reason": "x" * 2001}, "reason"),
    ("memory_forget", {"memory_type": "fact"}, "memory_id"),
    ("memory_contradict", {"fact_id": SOME_ID, "reasoning": "x" * 2001}, "reasoning"),
    ("entity_create", {"canonical_name": "A", "entity_type": "animal"}, "entity_type"),
    ("entity_get", {"entity_id": 42}, "entity_id"),
    ("entity_update", {"entity_id": SOME_ID, "metadata": {"merged_into": SOME_ID}}, "metadata"),
    ("entity_resolve", {"name": "A", "context_hints": {"topic": ""}}, "context_hints"),
    ("entity_merge", {"target_id": SOME_ID, "source_id": SOME_ID}, "source_id"),
    ("memory_run_consolidation", {"dry_run": True}, "dry_run"),
    ("memory_run_episode_cleanup", {"max_entries": -1}, "max_entries"),
    ("run_create", {"task_id": ""}, "task_id"),
    (
        "run_log_messages",
        {"run_id": SOME_ID, "messages": [{"role": "boss", "content": "x"}]},
        "role",
    ),
    ("run_finish", {"run_id": "nope"}, "run_id"),
    ("run_add_feedback", {"run_id": SOME_ID, "source": "critic", "rating": 2.0}, "rating"),
    ("run_get", {"run_id": 7}, "run_id"),
    ("run_delete", {"run_id": "nope"}, "run_id"),
    ("run_search", {"query": "q", "limit": 0}, "limit"),
    (
        "agent_event_append",
        {"ledger_name": "l", "agent_id": "a", "kind": "agent.spoke", "content": "x", "turn": -1},
        "turn",
    ),
    (
        "agent_context",
        {"ledger_name": "l", "agent_id": "a", "turn": 1, "relevance": "psychic"},
        "relevance",
    ),
    (
        "agent_reflect",
        {"ledger_name": "l", "agent_id": "a", "belief": "b", "based_on": []},
        "based_on",
    ),
    ("job_get", {"job_id": "nope"}, "job_id"),
    ("job_list", {"limit": 0}, "limit"),
    ("memory_delete", {"memory_type": "entity", "memory_id": SOME_ID}, "memory_type"),
    ("entity_delete", {"entity_id": SOME_ID, "facts": "keep"}, "facts"),
    ("memory_erase", {"butler": "b", "scope": "s"}, "exactly one"),
    ("memory_export", {"limit": 1001}, "limit"),
    ("memory_store_episodes", {"items": [{"content": "x", "butler": "b", "mood": "x"}]}, "mood"),
    ("memory_invert_rule", {"rule_id": "nope"}, "rule_id"),
    ("memory_list_episodes", {"consolidation_status": "done"}, "consolidation_status"),
    ("memory_list_facts", {"as_of": "yesterday"}, "as_of"),
    ("memory_fact_history", {"fact_id": 3}, "fact_id"),
    ("memory_list_rules", {"maturity": "wise"}, "maturity"),
    ("entity_list", {"limit": 201}, "limit"),
    ("entity_facts", {"entity_id": SOME_ID, "validity": "maybe"}, "validity"),
    ("run_list", {"cursor": "c" * 513}, "cursor"),
    ("run_learn_lessons", {"max_rating": 1.5}, "max_rating"),
    ("agent_event_list", {"ledger_name": ""}, "ledger_name"),
    ("agent_reflection_list", {"ledger_name": "l", "limit": 0}, "limit"),
    ("working_memory_get", {"agent_id": "", "session_id": "s"}, "agent_id"),
    ("working_memory_set", {"agent_id": "a", "session_id": "s", "ttl_seconds": 5}, "ttl_seconds"),
    ("working_memory_patch", {"agent_id": "a", "session_id": "s", "patch": []}, "patch"),
    (
        "working_memory_clear",
        {"agent_id": "a", "session_id": "s", "if_match": "x" * 2001},
        "if_match",
    ),
    ("scratchpad_get", {"agent_id": "a", "session_id": "s", "key": ""}, "key"),
    ("scratchpad_set", {"agent_id": "a", "session_id": "s", "key": "k"}, "value"),
    ("scratchpad_delete", {"agent_id": "a", "session_id": "x" * 201, "key": "k"}, "session_id"),
    (
        "procedure_store",
        {"agent_id": "a", "name": "n", "steps": [{"step": 2, "action": "go"}]},
        "steps",
    ),
    ("procedure_search", {"query": "q", "mode": "psychic"}, "mode"),
    ("procedure_get", {"procedure_id": "nope"}, "procedure_id"),
    ("procedure_list", {"status": "retired"}, "status"),
    (
        "procedure_record_execution",
        {"procedure_id": SOME_ID, "success": True, "duration_ms": -1},
        "duration_ms",
    ),
    ("procedure_set_status", {"procedure_id": SOME_ID, "status": "retired"}, "status"),
    ("procedure_new_version", {"procedure_id": SOME_ID, "steps": []}, "steps"),
    ("procedure_versions", {"procedure_id": 5}, "procedure_id"),
    ("arc_create", {"title": "t", "arc_type": "incident", "started_at": "soon"}, "started_at"),
    (
        "arc_add_event",
        {"arc_id": SOME_ID, "memory_type": "note", "memory_id": SOME_ID},
        "memory_type",
    ),
    ("arc_update", {"arc_id": SOME_ID, "status": "completed"}, "status"),
    ("arc_close", {"arc_id": SOME_ID, "outcome": "   "}, "outcome"),
    ("arc_get", {"arc_id": "nope"}, "arc_id"),
    ("arc_list", {"status": "paused"}, "status"),
    ("arc_search", {"query": "q", "limit": 101}, "limit"),
    ("arc_propose", {"scope": "b", "gap_minutes": 0}, "gap_minutes"),
    (
        "link_create",
        {
            "source_type": "fact",
            "source_id": SOME_ID,
            "target_type": "fact",
            "target_id": SOME_ID,
            "relation": "likes",
        },
        "relation",
    ),
    ("link_list", {"memory_type": "fact", "memory_id": SOME_ID, "direction": "up"}, "direction"),
    (
        "link_delete",
        {
            "source_type": "planet",
            "source_id": SOME_ID,
            "target_type": "fact",
            "target_id": SOME_ID,
        },
        "source_type",
    ),
    ("graph_neighbourhood", {"node_type": "fact", "node_id": SOME_ID, "hops": 4}, "hops"),
]


def test_every_tool_has_a_bad_argument_case() -> None:
    assert {tool for tool, _, _ in BAD_ARGUMENTS} == ALL_TOOLS


async def test_a_bad_argument_is_a_tool_error_naming_it(mcp_as: Any, sql: Any) -> None:
    async with mcp_as("acme") as client:
        for tool, arguments, argument in BAD_ARGUMENTS:
            message = error_text(await client.call_tool(tool, arguments))
            assert argument in message, (tool, message)
            assert "unexpected" not in message.lower(), (tool, message)
    # Nothing was stored or queued by the refused calls.
    for table in (
        "episodes",
        "facts",
        "rules",
        "entities",
        "jobs",
        "procedures",
        "arcs",
        "working_memories",
        "memory_links",
    ):
        assert await sql(f"SELECT tenant_id FROM {table}") == [], table


async def test_a_tenant_cannot_see_or_change_another_tenants_memories(
    mcp_as: Any,
    sql: Any,
) -> None:
    async with mcp_as("alpha") as alpha:
        episode = ok(
            await alpha.call_tool(
                "memory_store_episode",
                {"content": "zebrafinch sighting at Rottnest", "butler": "birds"},
            )
        )
        fact = ok(
            await alpha.call_tool(
                "memory_store_fact",
                {"subject": "zebrafinch", "predicate": "seen at", "content": "Rottnest island"},
            )
        )
        rule = ok(
            await alpha.call_tool("memory_store_rule", {"content": "Log every zebrafinch sighting"})
        )
        entity = ok(
            await alpha.call_tool(
                "entity_create", {"canonical_name": "Rottnest", "entity_type": "place"}
            )
        )
    own = {("episode", episode["id"]), ("fact", fact["id"]), ("rule", rule["id"])}
    async with mcp_as("beta") as beta:
        for memory_type, memory_id in own:
            target = {"memory_type": memory_type, "memory_id": memory_id}
            for tool in ("memory_get", "memory_forget"):
                assert "not found" in error_text(await beta.call_tool(tool, target)), tool
        for memory_type, memory in (("fact", fact), ("rule", rule)):
            target = {"memory_type": memory_type, "memory_id": memory["id"]}
            assert "not found" in error_text(await beta.call_tool("memory_confirm", target))
        assert "not found" in error_text(
            await beta.call_tool("memory_mark_harmful", {"rule_id": rule["id"]})
        )
        assert "not found" in error_text(
            await beta.call_tool("entity_get", {"entity_id": entity["id"]})
        )
        found = ok(await beta.call_tool("memory_search", {"query": "zebrafinch Rottnest"}))
        recalled = ok(await beta.call_tool("memory_recall", {"topic": "zebrafinch"}))
        resolved = ok(await beta.call_tool("entity_resolve", {"name": "Rottnest"}))
        stats = ok(await beta.call_tool("memory_stats", {}))
        claimed = error_text(
            await beta.call_tool("entity_resolve", {"name": "Rottnest", "tenant_id": "alpha"})
        )
    assert found["results"] == [] and recalled["results"] == []
    assert resolved["candidates"] == []
    assert (stats["episodes"]["total"], stats["facts"]["active"]) == (0, 0)
    assert "tenant_id" in claimed
    [fact_row] = await sql("SELECT validity, reference_count, last_confirmed_at FROM facts")
    assert (fact_row["validity"], fact_row["reference_count"]) == ("active", 0)
    assert fact_row["last_confirmed_at"].isoformat() == fact["last_confirmed_at"]
    [rule_row] = await sql("SELECT harmful_count, metadata FROM rules")
    assert (rule_row["harmful_count"], rule_row["metadata"]) == (0, {})
    [episode_row] = await sql("SELECT expires_at FROM episodes")
    assert episode_row["expires_at"].isoformat() == episode["expires_at"]


async def test_a_call_without_a_valid_key_is_refused(mcp_url: str, app: Any) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer not-a-key"}, {"X-API-Key": "nope"}):
            response = await http.post(
                mcp_url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            )
            assert response.status_code == 401, headers
            assert response.headers["content-type"] == "application/problem+json"
            assert response.headers["www-authenticate"] == 'Bearer realm="engram"'
    with pytest.raises(Exception, match="unhandled errors"):  # the SDK's MCPError, grouped
        async with connect(mcp_url, {}) as client:
            await client.list_tools()


async def test_the_x_api_key_header_is_accepted(
    mcp_url: str,
    api_key_for: Callable[[str], Awaitable[str]],
    sql: Any,
) -> None:
    key = await api_key_for("acme")
    async with connect(mcp_url, {"X-API-Key": key}) as client:
        ok(await client.call_tool("memory_store_rule", {"content": "Be kind"}))
    assert await sql("SELECT tenant_id FROM rules") == [{"tenant_id": "acme"}]


async def test_without_auth_every_call_is_the_default_tenant(
    settings: Settings, app: Any, sql: Any
) -> None:
    open_settings = settings.model_copy(update={"auth_disabled": True})
    with serve_in_thread(create_app(open_settings)) as url:
        async with connect(f"{url}/mcp", {}) as client:
            ok(await client.call_tool("memory_store_rule", {"content": "Be brief"}))
    assert await sql("SELECT tenant_id FROM rules") == [{"tenant_id": "default"}]


async def test_engram_mcp_bridges_stdio_to_the_server(
    mcp_url: str,
    api_key_for: Callable[[str], Awaitable[str]],
    sql: Any,
) -> None:
    key = await api_key_for("desk")
    bridge = StdioServerParameters(
        command=sys.executable,
        args=["-m", "app.cli", "mcp", "--url", mcp_url],
        env={"ENGRAM_API_KEY": key},
        cwd=str(REPO_ROOT),
    )
    async with Client(bridge) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        stored = ok(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "desk", "predicate": "via", "content": "stored through stdio"},
            )
        )
        refused = error_text(
            await client.call_tool(
                "memory_store_fact",
                {"subject": "desk", "predicate": "via", "content": "x", "importance": 99},
            )
        )
    assert listed == ALL_TOOLS
    assert "importance" in refused
    assert await sql("SELECT id::text AS id, tenant_id FROM facts") == [
        {"id": stored["id"], "tenant_id": "desk"}
    ]


async def test_a_tool_calls_events_name_the_callers_key(mcp_as: Any, sql: Any) -> None:
    async with mcp_as("acme") as client:
        episode = ok(
            await client.call_tool(
                "memory_store_episode",
                {"content": "Ann booked the train to Lyon", "butler": "travel"},
            )
        )
    [key] = await sql("SELECT id FROM api_keys WHERE tenant_id = 'acme'")
    [event] = await sql(
        "SELECT actor, actor_key_id FROM memory_events WHERE payload ->> 'memory_id' = :id",
        id=episode["id"],
    )
    assert (event["actor"], event["actor_key_id"]) == (f"key:{key['id']}", key["id"])


async def test_run_tools_record_a_failure_and_find_it_with_its_feedback(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        run = ok(
            await client.call_tool(
                "run_create", {"task_id": "invoice", "summary": "Sum the invoice lines"}
            )
        )
        logged = ok(
            await client.call_tool(
                "run_log_messages",
                {
                    "run_id": run["id"],
                    "messages": [
                        {"role": "planner", "content": "Add every line"},
                        {"role": "critic", "content": "VAT was added twice"},
                    ],
                },
            )
        )
        finished = ok(await client.call_tool("run_finish", {"run_id": run["id"], "success": False}))
        ok(
            await client.call_tool(
                "run_add_feedback",
                {
                    "run_id": run["id"],
                    "source": "critic",
                    "rating": 0.2,
                    "rationale": "Count VAT once",
                },
            )
        )
        found = ok(
            await client.call_tool("run_search", {"query": "total of an invoice", "success": False})
        )
        read = ok(await client.call_tool("run_get", {"run_id": run["id"]}))
    assert [m["role"] for m in logged["items"]] == ["planner", "critic"]
    assert finished["success"] is False and finished["finished_at"] is not None
    assert found["results"][0]["id"] == run["id"]
    assert [f["rationale"] for f in found["results"][0]["feedback"]] == ["Count VAT once"]
    assert len(read["messages"]) == 2


async def test_ledger_tools_give_an_agent_its_context_and_take_its_reflection(mcp_as: Any) -> None:
    async with mcp_as("acme") as client:
        seen = ok(
            await client.call_tool(
                "agent_event_append",
                {
                    "ledger_name": "town",
                    "agent_id": "alice",
                    "kind": "world.observed",
                    "content": "The mill is burning",
                    "turn": 1,
                },
            )
        )
        ok(
            await client.call_tool(
                "agent_event_append",
                {
                    "ledger_name": "town",
                    "agent_id": "bob",
                    "kind": "agent.thought",
                    "content": "bob's secret",
                    "turn": 1,
                },
            )
        )
        reflection = ok(
            await client.call_tool(
                "agent_reflect",
                {
                    "ledger_name": "town",
                    "agent_id": "alice",
                    "belief": "The town is in danger",
                    "based_on": [seen["id"]],
                },
            )
        )
        memory = ok(
            await client.call_tool(
                "agent_context", {"ledger_name": "town", "agent_id": "alice", "turn": 2}
            )
        )
    assert seen["visibility"] == "global"
    assert [r["id"] for r in memory["reflections"]] == [reflection["id"]]
    assert memory["recent"] == [] and "bob's secret" not in memory["context"]


async def test_facts_in_time_through_the_tools(mcp_as: Any) -> None:
    async with mcp_as("chronos") as client:
        for content, valid_from in STORE_ORDER:
            if content == "Ann works at Bluebird":
                await asyncio.sleep(0.01)
                before_correction = datetime.now(UTC).isoformat()
                await asyncio.sleep(0.01)
            stored = ok(
                await client.call_tool(
                    "memory_store_fact",
                    {
                        "subject": "Ann",
                        "predicate": "employer",
                        "content": content,
                        "valid_from": valid_from,
                    },
                )
            )
            assert stored["valid_from"][:10] == valid_from[:10]

        async def employers(**times: str) -> list[str]:
            found = ok(
                await client.call_tool(
                    "memory_search", {"query": "Ann works at", "types": ["fact"], **times}
                )
            )
            return [hit["content"] for hit in found["results"]]

        for as_of, employer in HELD:
            assert await employers(as_of=as_of) == ([] if employer is None else [employer])
        for as_of, employer in BELIEVED_BEFORE_CORRECTION:
            assert await employers(as_of=as_of, known_at=before_correction) == [employer]
        assert await employers() == ["Ann works at Cyberdyne"]
        recalled = ok(
            await client.call_tool(
                "memory_recall", {"topic": "Ann works at", "as_of": "2022-01-01T00:00:00Z"}
            )
        )
        assert [hit["content"] for hit in recalled["results"]] == ["Ann works at Bluebird"]
        assert recalled["as_of"].startswith("2022-01-01T00:00:00")
        refused = await client.call_tool("memory_search", {"query": "Ann", "as_of": "May"})
        assert "as_of" in error_text(refused)
