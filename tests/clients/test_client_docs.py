"""What docs/agents.md and docs/clients.md tell a client author, checked: the MCP example's
search finds the fact on a tenant that keeps conversation turns, a refused connection's
problem can be seen, `context` of rule feedback is an object, and the install lines name
what the examples import."""

import contextlib
import io
import json
import re
import tomllib
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram_client import AsyncEngramClient
from tests.support.paths import PYTHON_CLIENT
from tests.support.paths import REPO_ROOT as ROOT
from tests.support.readme import CLIENTS, examples

AGENTS = ROOT / "docs" / "agents.md"


def section(path: Path, heading: str) -> str:
    """The text of the `## heading` section of `path`."""
    text = path.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


async def run_example(code: str) -> str:
    """What the example prints, run in this loop (its `asyncio.run` becomes an await)."""
    code = code.replace("asyncio.run(main())", "")
    scope: dict[str, object] = {}
    exec(compile(code, "docs/agents.md", "exec"), scope)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await scope["main"]()  # type: ignore[operator]
    return out.getvalue()


async def test_the_mcp_example_prints_the_fact_on_a_tenant_with_conversation_turns(
    live_url, api_key_for
):
    key = await api_key_for("docs-mcp-example")
    async with AsyncEngramClient(live_url, api_key=key) as engram:
        for said in ("what colour does Ann like?", "What colour does Ann like? I forgot."):
            await engram.store_episode(said, butler="chat", session_id="earlier")
    mcp_example = examples("The same two steps, side by side", "python", AGENTS)[0]
    code = mcp_example.replace("<your key>", key).replace("http://127.0.0.1:8000", live_url)
    assert (await run_example(code)).strip() == "Ann likes green"


async def test_a_refused_mcp_connection_shows_engrams_problem_with_the_documented_hook(
    live_url, api_key_for
):
    [_, hook] = examples("The same two steps, side by side", "python", AGENTS)
    key = await api_key_for("docs-mcp-hook")
    scope: dict[str, object] = {"httpx2": httpx2, "headers": {"Authorization": f"Bearer {key}"}}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(hook, "docs/agents.md", "exec"), scope)
        http = scope["http"]
        assert isinstance(http, httpx2.AsyncClient)
        async with http:
            with pytest.raises(Exception):  # noqa: B017 - the SDK's own error type
                async with Client(
                    streamable_http_client(f"{live_url}/mcp?tools=nonsense", http_client=http)
                ):
                    pass
    assert "400" in out.getvalue() and "tools" in out.getvalue()


async def test_rule_feedback_context_is_documented_and_taken_as_an_object(live_url, api_key_for):
    doc = AGENTS.read_text()
    assert "| `memory_mark_helpful` | `rule_id`, `context` (a JSON object) |" in doc
    [example] = re.findall(r"`(\{\"rule_id\": .*?\})`", doc.replace("\n  ", " "))
    key = await api_key_for("docs-rule-feedback")
    headers = {"Authorization": f"Bearer {key}"}
    async with AsyncEngramClient(live_url, api_key=key) as engram:
        rule = await engram.store_rule("Ask before deleting files")
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(f"{live_url}/mcp", http_client=http)) as memory,
    ):
        arguments = json.loads(example.replace('"..."', f'"{rule.id}"'))
        harmful = await memory.call_tool("memory_mark_harmful", arguments)
        assert not harmful.is_error
        as_text = await memory.call_tool(
            "memory_mark_helpful", {"rule_id": str(rule.id), "context": "cleanup"}
        )
        assert as_text.is_error


def test_the_pydantic_ai_extra_brings_the_examples_model_provider():
    extras = tomllib.loads((PYTHON_CLIENT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(dep.startswith("pydantic-ai-slim[openai]") for dep in extras["pydantic-ai"])
    assert "pydantic-ai-slim[openai]" in section(CLIENTS, "Pydantic AI")


def test_the_vercel_section_says_to_install_ai_and_zod():
    [install] = examples("Vercel AI SDK", "bash", CLIENTS)
    assert re.search(r"npm install ai zod\b", install)
