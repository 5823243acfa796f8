"""AutoGen with Engram against a live server, in a venv of its own (autogen-core pins
protobuf 5, older than the server's onnx takes): an AssistantAgent on AutoGen's replay model
gets what `EngramMemory` stored in its model context, and nothing once it is cleared or
Engram is down."""

import asyncio
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.client_wheel import ClientVenv, framework_venv, run_script
from tests.support.readme import CLIENTS, examples

ANN = "Ann's favourite colour is green"
HEADER = "Relevant memories from Engram, best first:"


@pytest.fixture(scope="module")
def autogen_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientVenv]:
    """The client's wheel with its autogen extra, and autogen-ext for the replay model;
    removed after the module."""
    root = tmp_path_factory.mktemp("autogen")
    yield framework_venv(root, "autogen", ("autogen-ext>=0.7.5,<0.8",))
    shutil.rmtree(root, ignore_errors=True)


async def test_an_agent_gets_what_engram_remembers_and_nothing_once_cleared_or_down(
    autogen_venv: ClientVenv, live_url: str, api_key_for: Callable[[str], Any]
) -> None:
    key = await api_key_for("autogen")

    seen = await asyncio.to_thread(run_script, autogen_venv, "autogen_memory", live_url, key)

    remembered = seen["remembered"]
    assert remembered["reply"] == "Ann likes green"
    assert remembered["queried"][0] == {"content": ANN, "type": "episode"}
    [memories] = [text for text in remembered["system"] if text.startswith(HEADER)]
    assert f"1. {ANN}" in memories.splitlines()
    assert sorted(seen["episodes"], key=lambda row: row["content"]) == [
        {"content": ANN, "session_id": "monday", "metadata": {"mime_type": "text/plain"}},
        {
            "content": '{"city": "Lyon"}',
            "session_id": "monday",
            "metadata": {"n": 1, "mime_type": "application/json"},
        },
    ]
    assert seen["query"][0] == ANN
    assert seen["elsewhere"] == []
    assert seen["cleared_query"] == []
    assert seen["down"]["reply"] == "Hello"
    for case in ("cleared", "down"):
        assert not any(text.startswith(HEADER) for text in seen[case]["system"])


def test_the_documented_example_compiles() -> None:
    [example] = examples("AutoGen", "python", CLIENTS)
    compile(example, "docs/clients.md", "exec")
