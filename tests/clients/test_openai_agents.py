"""The OpenAI Agents SDK with Engram against a live server: a scripted model's runs keep their
conversation in an EngramSession and their memories through Engram's tools."""

import json
import subprocess
import sys

import pytest
from agents import Agent, Runner

from engram_client.openai_agents import EngramSession, engram_tools
from tests.support.agents_model import NO_TRACES, ScriptedModel, call, say, tool_outputs
from tests.support.readme import CLIENTS, examples


async def test_a_later_run_finds_what_an_earlier_one_remembered(engram):
    model = ScriptedModel(
        call(
            "remember",
            subject="Ann",
            predicate="favourite colour",
            content="Ann's favourite colour is green",
        ),
        say("noted"),
    )
    agent = Agent(name="assistant", model=model, tools=engram_tools(engram, butler="chat"))
    first = await Runner.run(
        agent,
        "Remember that Ann likes green",
        session=EngramSession("monday", engram, butler="chat"),
        run_config=NO_TRACES,
    )
    assert first.final_output == "noted"

    model = ScriptedModel(
        call("search", query="What colour does Ann like?"),
        call("recall", topic="Ann's favourite colour"),
        say(tool_outputs),
    )
    agent = Agent(name="assistant", model=model, tools=engram_tools(engram, butler="chat"))
    later = await Runner.run(
        agent,
        "What colour does Ann like?",
        session=EngramSession("tuesday", engram, butler="chat"),
        run_config=NO_TRACES,
    )
    searched, recalled = json.loads(later.final_output)
    assert ("fact", "Ann's favourite colour is green") in [
        (hit["type"], hit["content"]) for hit in searched
    ]
    assert [(hit["type"], hit["content"]) for hit in recalled] == [
        ("fact", "Ann's favourite colour is green")
    ]

    model = ScriptedModel(call("search", query="What colour does Ann like?"), say(tool_outputs))
    agent = Agent(name="assistant", model=model, tools=engram_tools(engram, butler="other"))
    elsewhere = await Runner.run(agent, "What colour does Ann like?", run_config=NO_TRACES)
    assert "green" not in elsewhere.final_output


async def test_a_session_object_made_later_continues_the_conversation(engram):
    model = ScriptedModel(call("search", query="Lyon"), say("Nothing yet."))
    agent = Agent(name="assistant", model=model, tools=engram_tools(engram))
    await Runner.run(
        agent,
        "I moved to Lyon",
        session=EngramSession("conv", engram, tool_items=True),
        run_config=NO_TRACES,
    )
    stored = await EngramSession("conv", engram).get_items()
    assert [item.get("type", "message") for item in stored] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert stored[0] == {"role": "user", "content": "I moved to Lyon"}
    assert stored[1]["name"] == "search" and stored[1]["call_id"] == "call-search"
    assert stored[3]["content"][0]["text"] == "Nothing yet."

    model = ScriptedModel(say("Lyon, you said."))
    agent = Agent(name="assistant", model=model)
    await Runner.run(
        agent, "Where do I live?", session=EngramSession("conv", engram), run_config=NO_TRACES
    )
    assert model.inputs[0][:4] == stored
    assert model.inputs[0][4] == {"role": "user", "content": "Where do I live?"}


async def test_the_session_protocol_over_episodes(engram):
    session = EngramSession("proto", engram)
    assert await session.get_items() == [] and await session.pop_item() is None
    items = [{"role": "user", "content": f"turn {n}"} for n in range(5)]
    await session.add_items(items[:3])
    await session.add_items(items[3:])
    await session.add_items([])
    assert await session.get_items() == items
    assert await session.get_items(limit=2) == items[3:]
    assert await session.get_items(limit=0) == []
    assert await session.pop_item() == items[4]
    assert await EngramSession("proto", engram).get_items() == items[:4]
    await EngramSession("other", engram).add_items(items[:1])
    await session.clear_session()
    assert await session.get_items() == []
    assert await EngramSession("other", engram).get_items() == items[:1]


def test_importing_engram_client_loads_no_framework():
    frameworks = ["agents", "pydantic_ai", "llama_index", "langgraph", "ai"]
    code = (
        "import sys, engram_client; "
        f"print(sorted(set({frameworks!r}) & {{m.split('.')[0] for m in sys.modules}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_documented_example_compiles():
    [example] = examples("OpenAI Agents SDK", "python", CLIENTS)
    compile(example, "docs/clients.md", "exec")


async def test_the_settings_limit_is_the_default_limit(engram):
    session = EngramSession("limited", engram, session_settings={"limit": 2})
    items = [{"role": "user", "content": f"turn {n}"} for n in range(3)]
    await session.add_items(items)
    assert await session.get_items() == items[1:]
    assert await session.get_items(limit=3) == items
    with pytest.raises(TypeError):
        EngramSession("limited", engram, session_settings={"limitt": 1})
