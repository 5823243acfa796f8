"""Every REST operation an agent would call has an MCP tool that some tool group serves; the
rest are listed, with the reason, in docs/agents.md ("What stays REST-only")."""

import re

from fastapi import FastAPI

from app.core.config import Settings
from app.main import create_app
from app.mcp.groups import GROUPS
from app.mcp.server import tool_groups
from tests.support.paths import REPO_ROOT

AGENTS_DOC = REPO_ROOT / "docs" / "agents.md"

# "METHOD /path" of a REST operation -> the MCP tool that does the same.
TOOL_FOR_ROUTE: dict[str, str] = {
    "POST /v1/episodes": "memory_store_episode",
    "POST /v1/episodes/batch": "memory_store_episodes",
    "GET /v1/episodes": "memory_list_episodes",
    "GET /v1/episodes/{episode_id}": "memory_get",
    "POST /v1/episodes/{episode_id}/forget": "memory_forget",
    "DELETE /v1/episodes/{episode_id}": "memory_delete",
    "POST /v1/facts": "memory_store_fact",
    "GET /v1/facts": "memory_list_facts",
    "GET /v1/facts/{fact_id}": "memory_get",
    "GET /v1/facts/{fact_id}/history": "memory_fact_history",
    "POST /v1/facts/{fact_id}/confirm": "memory_confirm",
    "POST /v1/facts/{fact_id}/contradict": "memory_contradict",
    "POST /v1/facts/{fact_id}/forget": "memory_forget",
    "DELETE /v1/facts/{fact_id}": "memory_delete",
    "POST /v1/rules": "memory_store_rule",
    "GET /v1/rules": "memory_list_rules",
    "GET /v1/rules/{rule_id}": "memory_get",
    "POST /v1/rules/{rule_id}/confirm": "memory_confirm",
    "POST /v1/rules/{rule_id}/forget": "memory_forget",
    "POST /v1/rules/{rule_id}/helpful": "memory_mark_helpful",
    "POST /v1/rules/{rule_id}/harmful": "memory_mark_harmful",
    "POST /v1/rules/{rule_id}/invert": "memory_invert_rule",
    "DELETE /v1/rules/{rule_id}": "memory_delete",
    "POST /v1/jobs/consolidation": "memory_run_consolidation",
    "POST /v1/jobs/cleanup": "memory_run_episode_cleanup",
    "POST /v1/jobs/arc-boundaries": "arc_propose",
    "GET /v1/jobs": "job_list",
    "GET /v1/jobs/{job_id}": "job_get",
    "POST /v1/entities": "entity_create",
    "GET /v1/entities": "entity_list",
    "POST /v1/entities/resolve": "entity_resolve",
    "GET /v1/entities/{entity_id}": "entity_get",
    "PATCH /v1/entities/{entity_id}": "entity_update",
    "GET /v1/entities/{entity_id}/facts": "entity_facts",
    "POST /v1/entities/{target_id}/merge": "entity_merge",
    "DELETE /v1/entities/{entity_id}": "entity_delete",
    "POST /v1/links": "link_create",
    "GET /v1/links": "link_list",
    "DELETE /v1/links": "link_delete",
    "POST /v1/runs": "run_create",
    "GET /v1/runs": "run_list",
    "POST /v1/runs/search": "run_search",
    "POST /v1/runs/lessons": "run_learn_lessons",
    "GET /v1/runs/{run_id}": "run_get",
    "DELETE /v1/runs/{run_id}": "run_delete",
    "PATCH /v1/runs/{run_id}": "run_finish",
    "POST /v1/runs/{run_id}/messages": "run_log_messages",
    "POST /v1/runs/{run_id}/messages/batch": "run_log_messages",
    "POST /v1/runs/{run_id}/feedback": "run_add_feedback",
    "POST /v1/ledgers/{ledger_name}/events": "agent_event_append",
    "GET /v1/ledgers/{ledger_name}/events": "agent_event_list",
    "GET /v1/ledgers/{ledger_name}/reflections": "agent_reflection_list",
    "POST /v1/ledgers/{ledger_name}/agents/{agent_id}/reflections": "agent_reflect",
    "POST /v1/ledgers/{ledger_name}/agents/{agent_id}/context": "agent_context",
    "GET /v1/graph/{node_type}/{node_id}": "graph_neighbourhood",
    "POST /v1/search": "memory_search",
    "POST /v1/recall": "memory_recall",
    "POST /v1/context": "memory_context",
    "GET /v1/stats": "memory_stats",
    "POST /v1/erasures": "memory_erase",
    "GET /v1/export": "memory_export",
    "GET /v1/working-memory/{agent_id}/{session_id}": "working_memory_get",
    "PUT /v1/working-memory/{agent_id}/{session_id}": "working_memory_set",
    "PATCH /v1/working-memory/{agent_id}/{session_id}": "working_memory_patch",
    "DELETE /v1/working-memory/{agent_id}/{session_id}": "working_memory_clear",
    "GET /v1/working-memory/{agent_id}/{session_id}/scratchpad/{key}": "scratchpad_get",
    "PUT /v1/working-memory/{agent_id}/{session_id}/scratchpad/{key}": "scratchpad_set",
    "DELETE /v1/working-memory/{agent_id}/{session_id}/scratchpad/{key}": "scratchpad_delete",
    "POST /v1/procedures": "procedure_store",
    "GET /v1/procedures": "procedure_list",
    "POST /v1/procedures/search": "procedure_search",
    "GET /v1/procedures/{procedure_id}": "procedure_get",
    "PATCH /v1/procedures/{procedure_id}": "procedure_set_status",
    "POST /v1/procedures/{procedure_id}/executions": "procedure_record_execution",
    "POST /v1/procedures/{procedure_id}/versions": "procedure_new_version",
    "GET /v1/procedures/{procedure_id}/versions": "procedure_versions",
    "POST /v1/arcs": "arc_create",
    "GET /v1/arcs": "arc_list",
    "POST /v1/arcs/search": "arc_search",
    "GET /v1/arcs/{arc_id}": "arc_get",
    "PATCH /v1/arcs/{arc_id}": "arc_update",
    "POST /v1/arcs/{arc_id}/events": "arc_add_event",
    "POST /v1/arcs/{arc_id}/close": "arc_close",
}

# Operations an agent has no call for, each listed with its reason in docs/agents.md.
REST_ONLY: set[str] = {
    "POST /v1/jobs/decay",
    "POST /v1/jobs/pii-scrub",
    "POST /v1/import",
    "GET /v1/events",
    "POST /v1/facts/bulk",
    "POST /v1/facts/bulk/get",
    "POST /v1/facts/bulk/delete",
}

# Operations of the OpenAPI document outside /v1: probes for load balancers, not for agents.
NOT_FOR_AGENTS: set[str] = {"GET /healthz", "GET /readyz"}


def rest_operations(app: FastAPI) -> list[str]:
    """ "METHOD /path" of every /v1 operation of the app's routes, as its OpenAPI document
    (built from the route table) lists them."""
    return sorted(
        f"{method.upper()} {path}"
        for path, methods in app.openapi()["paths"].items()
        if path.startswith("/v1/")
        for method in methods
    )


def uncovered(operations: list[str]) -> list[str]:
    """The operations with neither a tool nor a REST-only entry."""
    return [op for op in operations if op not in TOOL_FOR_ROUTE and op not in REST_ONLY]


async def tool_names(app: FastAPI) -> set[str]:
    """The names tools/list answers with."""
    return {tool.name for tool in await app.state.mcp.server.list_tools()}


def rest_only_section() -> str:
    """The part of docs/agents.md that lists the REST-only operations."""
    text = AGENTS_DOC.read_text()
    match = re.search(r"^## What stays REST-only\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, "docs/agents.md has no 'What stays REST-only' section"
    return match.group(1)


def test_every_rest_operation_has_a_tool_or_a_documented_reason() -> None:
    operations = rest_operations(create_app(Settings()))
    assert len(operations) > 80
    assert uncovered(operations) == [], (
        "add an MCP tool for these operations (and map it in TOOL_FOR_ROUTE), or list them "
        "in REST_ONLY and docs/agents.md with the reason"
    )
    assert not set(TOOL_FOR_ROUTE) & REST_ONLY
    stale = sorted((set(TOOL_FOR_ROUTE) | REST_ONLY) - set(operations))
    assert stale == [], "these operations no longer exist"


def test_a_new_route_without_a_tool_or_a_reason_is_caught() -> None:
    app = create_app(Settings())

    @app.get("/v1/widgets", summary="List widgets")
    async def list_widgets() -> list[str]:
        return []

    assert uncovered(rest_operations(app)) == ["GET /v1/widgets"]


def test_every_operation_of_the_openapi_document_is_a_tool_of_a_group_or_not_for_agents() -> None:
    document = create_app(Settings()).openapi()
    operations = {
        f"{method.upper()} {path}"
        for path, methods in document["paths"].items()
        for method in methods
    }
    served = {tool for tool, group in tool_groups().items() if group in GROUPS}
    reachable = {operation for operation, tool in TOOL_FOR_ROUTE.items() if tool in served}
    assert operations - reachable - REST_ONLY == NOT_FOR_AGENTS


async def test_every_mapped_tool_exists_and_every_tool_has_its_rest_operation() -> None:
    listed = await tool_names(create_app(Settings()))
    assert set(TOOL_FOR_ROUTE.values()) == listed


def test_docs_give_the_reason_for_each_rest_only_operation() -> None:
    section = rest_only_section()
    for operation in sorted(REST_ONLY):
        assert f"`{operation}`" in section, operation
    documented = set(re.findall(r"`((?:GET|POST|PUT|PATCH|DELETE) /v1/[^`]*)`", section))
    assert documented == REST_ONLY


async def test_docs_list_every_tool_and_count_them() -> None:
    names = await tool_names(create_app(Settings()))
    table_rows = [line for line in AGENTS_DOC.read_text().splitlines() if line.startswith("|")]
    for name in sorted(names):
        assert any(f"`{name}`" in row for row in table_rows), name
    root = REPO_ROOT
    for page in (root / "README.md", root / "docs" / "api.md", AGENTS_DOC):
        counts = re.findall(r"(\d+) (?:MCP )?tools\b", page.read_text())
        assert counts and set(counts) == {str(len(names))}, (page.name, counts)


def test_docs_list_each_groups_tools() -> None:
    text = AGENTS_DOC.read_text()
    match = re.search(r"^## Tool groups\n(.*?)(?=^## )", text, flags=re.M | re.S)
    assert match, "docs/agents.md has no 'Tool groups' section"
    documented: dict[str, str] = {}
    for group, tools in re.findall(r"^\| `(\w+)`[^|]* \| (.*) \|$", match.group(1), flags=re.M):
        documented.update(dict.fromkeys(re.findall(r"`(\w+)`", tools), group))
    assert documented == tool_groups()
