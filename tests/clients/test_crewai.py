"""CrewAI with Engram against a live server, in a venv of its own (crewai pins mcp < 2, the
server needs mcp 2): a crew whose agent's LLM is an OpenAI-compatible stub on loopback gets
what `EngramMemory` remembered in its task prompt, what the task produced is stored as an
episode, and nothing is found once the memory is reset."""

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tests.support.client_wheel import ClientVenv, framework_venv, run_script
from tests.support.llm_stub import LLMStub, Reply
from tests.support.readme import CLIENTS, examples

ANN = "Ann's favourite colour is green"
# The agent's LLM calls tools natively: a reply without tool calls is the final answer.
ANSWER = "Ann likes green"


@pytest.fixture(scope="module")
def crewai_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientVenv]:
    """The client's wheel with its crewai extra (a GB); removed after the module."""
    root = tmp_path_factory.mktemp("crewai")
    yield framework_venv(root, "crewai")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def crew_llm() -> AsyncIterator[LLMStub]:
    """An OpenAI-compatible chat completions stub that always gives ANSWER."""
    stub = await LLMStub().start()
    stub.responder = lambda _request: Reply(content=ANSWER)
    yield stub
    await stub.stop()


async def test_a_crew_gets_what_engram_remembers_and_its_result_is_stored(
    crewai_venv: ClientVenv,
    crew_llm: LLMStub,
    live_url: str,
    api_key_for: Callable[[str], Any],
    tmp_path: Any,
) -> None:
    key = await api_key_for("crewai")

    seen = await asyncio.to_thread(
        run_script,
        crewai_venv,
        "crewai_memory",
        live_url,
        key,
        crew_llm.base_url,
        HOME=str(tmp_path),
        CREWAI_DISABLE_TELEMETRY="true",
        CREWAI_TRACING_ENABLED="false",
        OTEL_SDK_DISABLED="true",
    )

    assert seen["answer"] == "Ann likes green"
    [prompt] = [m["content"] for m in crew_llm.requests[0]["messages"] if m["role"] == "user"]
    assert ANN in prompt
    contents = [row["content"] for row in seen["episodes"]]
    assert ANN in contents
    [result] = [text for text in contents if text.startswith("Task: What colour does Ann like?")]
    assert "Result: Ann likes green" in result
    [remembered] = [row for row in seen["episodes"] if row["content"] == ANN]
    assert remembered["metadata"] == {"crewai": {"categories": ["people"], "agent_role": "planner"}}
    assert seen["recalled"][0] == ANN
    assert seen["categories"] == [["episode"]]
    assert seen["after_reset"] == []


def test_the_documented_example_compiles() -> None:
    [example] = examples("CrewAI", "python", CLIENTS)
    compile(example, "docs/clients.md", "exec")
