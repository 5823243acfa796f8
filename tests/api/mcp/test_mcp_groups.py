"""Tool groups over MCP: a small core set by default, more groups by name, each tools/list
within a budget of characters, measured on the wire."""

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from app.mcp.groups import GROUPS
from app.mcp.server import tool_groups
from tests.support.mcp import ALL_TOOLS, error_text, ok
from tests.support.paths import REPO_ROOT

KeyFor = Callable[[str], Awaitable[str]]

CORE_TOOLS = {
    "memory_store_episode",
    "memory_store_fact",
    "memory_store_rule",
    "memory_forget",
    "memory_contradict",
    "memory_confirm",
    "memory_get",
    "memory_search",
    "memory_recall",
    "memory_context",
    "memory_mark_helpful",
    "memory_mark_harmful",
}
# Characters of json.dumps(tools) of each group's tools/list, a little above what it
# measures today; core's is the promise to hosts (at most 12 tools, 16,000 characters).
BUDGETS = {
    "core": 16_000,
    "memories": 9_000,
    "entities": 10_000,
    "admin": 6_000,
    "runs": 8_000,
    "ledger": 6_000,
    "working_memory": 8_500,
    "procedures": 9_500,
    "arcs": 10_000,
    "graph": 7_500,
    "all": 90_000,
}


def base_url(url: str) -> str:
    """`url` without its query: /mcp as a host that asks for no group connects to it."""
    return urlsplit(url)._replace(query="").geturl()


@asynccontextmanager
async def wire(url: str, key: str) -> AsyncIterator[tuple[Client, list[Any]]]:
    """An SDK client session and the JSON bodies of the responses it received."""
    bodies: list[Any] = []

    async def keep(response: httpx2.Response) -> None:
        await response.aread()
        if response.headers.get("content-type", "").startswith("application/json"):
            bodies.append(response.json())

    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=60, event_hooks={"response": [keep]}
    ) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client, bodies


async def listed(url: str, key: str) -> tuple[list[str], int]:
    """The tools/list answer at `url`: the tools' names and the characters of their JSON."""
    async with wire(url, key) as (client, bodies):
        names = [tool.name for tool in (await client.list_tools()).tools]
    [tools] = [body["result"]["tools"] for body in bodies if "tools" in body.get("result", {})]
    assert [tool["name"] for tool in tools] == names
    return names, len(json.dumps(tools))


async def test_mcp_serves_the_core_tools_unless_asked_for_more(
    mcp_url: str, api_key_for: KeyFor
) -> None:
    key = await api_key_for("acme")
    core, _ = await listed(base_url(mcp_url), key)
    with_runs, _ = await listed(base_url(mcp_url) + "?tools=core,runs", key)
    everything, _ = await listed(base_url(mcp_url) + "?tools=all", key)
    assert set(core) == CORE_TOOLS and len(core) <= 12
    runs = {name for name, group in tool_groups().items() if group == "runs"}
    assert set(with_runs) == CORE_TOOLS | runs
    assert with_runs[: len(core)] == core, "core tools come first"
    assert set(everything) == ALL_TOOLS and len(everything) == 75
    assert everything[: len(core)] == core


@pytest.mark.parametrize("group", [*GROUPS, "all"])
async def test_each_groups_tool_list_fits_its_budget(
    group: str, mcp_url: str, api_key_for: KeyFor
) -> None:
    names, characters = await listed(
        base_url(mcp_url) + f"?tools={group}", await api_key_for("acme")
    )
    print(f"{group}: {len(names)} tools, {characters} characters")
    members = {name for name, of in tool_groups().items() if of == group or group == "all"}
    assert set(names) == members
    assert characters <= BUDGETS[group], (group, characters)


def test_every_tool_is_in_exactly_one_group() -> None:
    groups = tool_groups()
    assert set(groups) == ALL_TOOLS
    assert set(groups.values()) == set(GROUPS)
    assert {name for name, group in groups.items() if group == "core"} == CORE_TOOLS


async def test_a_tool_of_a_group_not_asked_for_is_refused_naming_the_group(
    mcp_url: str, api_key_for: KeyFor
) -> None:
    key = await api_key_for("acme")
    async with wire(base_url(mcp_url), key) as (client, _):
        refused = error_text(await client.call_tool("run_list", {}))
        stored = ok(await client.call_tool("memory_store_rule", {"content": "Be on time"}))
    async with wire(base_url(mcp_url) + "?tools=core,runs", key) as (client, _):
        runs = ok(await client.call_tool("run_list", {}))
    assert "'runs'" in refused and "tools=core,runs" in refused, refused
    assert stored["content"] == "Be on time"
    assert runs["items"] == []


@pytest.mark.parametrize("query", ["tools=core,bogus", "tools=all,bogus", "tools=", "tools=%20,"])
async def test_an_unknown_group_is_a_400_naming_tools(
    query: str, mcp_url: str, api_key_for: KeyFor
) -> None:
    key = await api_key_for("acme")
    async with httpx.AsyncClient(timeout=30) as http:
        answer = await http.post(
            f"{base_url(mcp_url)}?{query}",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Authorization": f"Bearer {key}",
                "Accept": "application/json, text/event-stream",
            },
        )
    assert answer.status_code == 400
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert [error["field"] for error in problem["errors"]] == ["query.tools"]
    assert "core" in problem["detail"] and "all" in problem["detail"]


async def test_engram_mcp_serves_the_groups_asked_for(mcp_url: str, api_key_for: KeyFor) -> None:
    key = await api_key_for("desk")

    async def bridged(*tools: str) -> set[str]:
        bridge = StdioServerParameters(
            command=sys.executable,
            args=["-m", "app.cli", "mcp", "--url", base_url(mcp_url), *tools],
            env={"ENGRAM_API_KEY": key},
            cwd=str(REPO_ROOT),
        )
        async with Client(bridge) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    procedures = {name for name, group in tool_groups().items() if group == "procedures"}
    assert await bridged() == CORE_TOOLS
    assert await bridged("--tools", "core,procedures") == CORE_TOOLS | procedures
    assert await bridged("--tools", "all") == ALL_TOOLS


def test_engram_mcp_refuses_an_unknown_group() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "mcp", "--tools", "core,bogus"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode != 0
    assert "--tools" in run.stderr and "'bogus'" in run.stderr, run.stderr
