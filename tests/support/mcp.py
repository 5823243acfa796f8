"""MCP over HTTP for the tests: the SDK's client, the tools the server lists, the JSON of a
tool's answer or the message of its error."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

SPEC_TOOLS = {
    "memory_store_episode",
    "memory_store_fact",
    "memory_store_rule",
    "memory_search",
    "memory_recall",
    "memory_get",
    "memory_confirm",
    "memory_mark_helpful",
    "memory_mark_harmful",
    "memory_forget",
    "memory_stats",
    "memory_context",
    "entity_create",
    "entity_get",
    "entity_update",
    "entity_resolve",
    "entity_merge",
    "memory_run_consolidation",
    "memory_run_episode_cleanup",
}
# Beyond the 19 memory tools: task runs and agent ledger memory.
RUN_TOOLS = {
    "run_create",
    "run_log_messages",
    "run_finish",
    "run_add_feedback",
    "run_get",
    "run_delete",
    "run_search",
    "agent_event_append",
    "agent_context",
    "agent_reflect",
}
# Beyond the 19 memory tools: following jobs, and deletion, erasure and export as REST offers them.
JOB_TOOLS = {"job_get", "job_list"}
DATA_TOOLS = {"memory_delete", "entity_delete", "memory_erase", "memory_export"}
# Beyond those: every other REST operation an agent would call
# (tests/contracts/test_mcp_coverage.py).
MORE_TOOLS = {
    "memory_store_episodes",
    "memory_invert_rule",
    "memory_list_episodes",
    "memory_list_facts",
    "memory_fact_history",
    "memory_list_rules",
    "entity_list",
    "entity_facts",
    "run_list",
    "run_learn_lessons",
    "agent_event_list",
    "agent_reflection_list",
    "working_memory_get",
    "working_memory_set",
    "working_memory_patch",
    "working_memory_clear",
    "scratchpad_get",
    "scratchpad_set",
    "scratchpad_delete",
    "procedure_store",
    "procedure_search",
    "procedure_get",
    "procedure_list",
    "procedure_record_execution",
    "procedure_set_status",
    "procedure_new_version",
    "procedure_versions",
    "arc_create",
    "arc_add_event",
    "arc_update",
    "arc_close",
    "arc_get",
    "arc_list",
    "arc_search",
    "arc_propose",
    "link_create",
    "link_list",
    "link_delete",
    "graph_neighbourhood",
}
# Beyond the 19 memory tools: evidence against a fact.
BELIEF_TOOLS = {"memory_contradict"}
ALL_TOOLS = SPEC_TOOLS | RUN_TOOLS | JOB_TOOLS | DATA_TOOLS | MORE_TOOLS | BELIEF_TOOLS


@asynccontextmanager
async def connect(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """An SDK client session against `url`, sending `headers` on every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def ok(result: CallToolResult) -> dict[str, Any]:
    """The JSON of a successful tool result; its text and structured forms agree."""
    assert not result.is_error, result.content
    [content] = result.content
    parsed: dict[str, Any] = json.loads(content.text)  # type: ignore[union-attr]
    assert result.structured_content == parsed
    return parsed


def error_text(result: CallToolResult) -> str:
    """The message of a failed tool call."""
    assert result.is_error, result.structured_content
    return " ".join(block.text for block in result.content)  # type: ignore[union-attr]
