"""Google ADK with Engram against a live server, in a venv of its own (google-adk pins
opentelemetry at most 1.44 and websockets below 16, and brings opentelemetry-sdk, which
would turn the server's tracing tests): a Runner's session goes into `EngramMemoryService`
once however often it is added, and in a later session `load_memory`, called by a scripted
offline model, brings it back; another user finds none of it."""

import asyncio
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.client_wheel import ClientVenv, framework_venv, run_script
from tests.support.readme import CLIENTS, examples

ANN = "Ann's favourite colour is green"


@pytest.fixture(scope="module")
def google_adk_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientVenv]:
    """The client's wheel with its google-adk extra; removed after the module."""
    root = tmp_path_factory.mktemp("google-adk")
    yield framework_venv(root, "google-adk")
    shutil.rmtree(root, ignore_errors=True)


async def test_a_later_session_loads_what_an_earlier_one_said_and_no_other_user_does(
    google_adk_venv: ClientVenv, live_url: str, api_key_for: Callable[[str], Any]
) -> None:
    key = await api_key_for("google-adk")

    seen = await asyncio.to_thread(run_script, google_adk_venv, "google_adk_memory", live_url, key)

    assert seen["told_reply"] == "Noted."
    assert sorted(tuple(row.values()) for row in seen["episodes"]) == [
        (ANN, seen["session_id"], "notes/ann"),
        ("Noted.", seen["session_id"], "notes/ann"),
    ]
    assert f'text="{ANN}"' in seen["ann_loaded"]
    assert seen["bob_loaded"] == "memories=[]"
    first = seen["searched"][0]
    assert (first["text"], first["role"], first["author"]) == (ANN, "user", "user")
    assert first["timestamp"] and first["id"]
    assert first["custom_metadata"] == {"memory_type": "episode"}


def test_the_documented_example_compiles() -> None:
    [example] = examples("Google ADK", "python", CLIENTS)
    compile(example, "docs/clients.md", "exec")
