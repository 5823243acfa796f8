"""The framework adapters when Engram is down, refuses a call, or holds the turn being asked:
LlamaIndex's block fails open and stores every turn, the OpenAI Agents session keeps tool
traffic and the current question out of search, tools show Engram's problem, and transport
errors name the request."""

import json
import logging
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from agents import Agent, Runner
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory

from engram_client import AsyncEngramClient, EngramClient, RetryPolicy
from engram_client.llama_index import EngramMemoryBlock
from engram_client.openai_agents import EngramSession, engram_tools
from tests.support.agents_model import NO_TRACES, ScriptedModel, call, say


def closed_url() -> str:
    """The URL of a local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
async def mine(live_url, api_key_for) -> AsyncIterator[AsyncEngramClient]:
    key = await api_key_for("client-faults")
    async with AsyncEngramClient(
        live_url, api_key=key, retry=RetryPolicy(retries=2, base_delay=0.01)
    ) as engram:
        yield engram


def documented_chat(block: EngramMemoryBlock, session_id: str) -> tuple[SimpleChatEngine, Memory]:
    """A chat engine with the memory settings of docs/clients.md; MockLLM echoes its prompt."""
    memory = Memory.from_defaults(session_id=session_id, token_limit=4000, memory_blocks=[block])
    return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory), memory


async def test_the_llama_index_block_fails_open_fast_when_engram_is_down(caplog):
    caplog.set_level(logging.WARNING)
    async with AsyncEngramClient(closed_url()) as down:
        chat, _ = documented_chat(EngramMemoryBlock(client=down, butler="chat"), "down")
        started = time.monotonic()
        for said in ("Hello there", "Ann likes green", "What colour does Ann like?"):
            answer = (await chat.achat(said)).response
            assert said in answer and "Memory Context" not in answer
        assert time.monotonic() - started < 4.0
    warnings = [r for r in caplog.records if r.name == "engram_client.llama_index"]
    assert len(warnings) == 1 and "127.0.0.1" in warnings[0].getMessage()


async def test_a_short_llama_index_chat_reaches_engram_with_the_documented_settings(mine):
    block = EngramMemoryBlock(client=mine, butler="chat")
    chat, memory = documented_chat(block, "short-chat")
    said = ["Ann likes green.", "Her dog is Rex.", "She lives in Lyon."]
    for text in said:
        await chat.achat(text)

    async def stored() -> list[tuple[str, str]]:
        page = await mine.list_page("episodes", session_id="short-chat", limit=50)
        rows = sorted(page["items"], key=lambda row: row["sequence"])
        return [(row["metadata"]["role"], row["content"]) for row in rows]

    asked = await stored()
    assert [content for role, content in asked if role == "user"] == said
    assert [role for role, _ in asked] == ["user", "assistant"] * 2 + ["user"]
    await block.aflush(memory)
    await block.aflush(memory)
    assert [role for role, _ in await stored()] == ["user", "assistant"] * 3


async def test_the_block_leaves_the_current_session_out_of_its_past_turns(mine):
    await mine.store_episode("Ann said her favourite colour is green.", butler="past-turns")
    block = EngramMemoryBlock(client=mine, butler="past-turns")
    chat, _ = documented_chat(block, "now")
    answer = (await chat.achat("What colour does Ann like?")).response
    past = answer.split("## Past Conversation", 1)[1].split("</memory>", 1)[0]
    assert "Ann said her favourite colour is green." in past
    assert "What colour does Ann like?" not in past


def search_results(items: list[Any]) -> list[dict[str, Any]]:
    """The hits of the search tool calls the model was given."""
    outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
    return [hit for output in outputs for hit in json.loads(output)]


@pytest.mark.parametrize("tool_items", [False, True])
async def test_a_session_search_never_finds_its_own_question_or_tool_traffic(mine, tool_items):
    butler, session_id = f"ann-{tool_items}", f"conv-{tool_items}"
    await mine.store_fact("Ann", "likes", "Ann likes green", scope=butler)
    tools = engram_tools(mine, butler=butler)
    session = EngramSession(session_id, mine, butler=butler, tool_items=tool_items)
    first = ScriptedModel(call("search", query="Ann colour"), say("Let me think."))
    await Runner.run(
        Agent(name="a", model=first, tools=tools),
        "Tell me about Ann",
        session=session,
        run_config=NO_TRACES,
    )
    question = "What colour does Ann like?"
    second = ScriptedModel(call("search", query=question, limit=20), say("Green."))
    await Runner.run(
        Agent(name="a", model=second, tools=tools), question, session=session, run_config=NO_TRACES
    )
    hits = search_results(second.inputs[1])
    contents = [hit["content"] for hit in hits]
    assert "Ann likes green" in contents
    assert question not in contents
    assert not [c for c in contents if c.startswith("{") or "function_call" in c], contents
    assert "Tell me about Ann" in contents  # an earlier turn is a memory like any other

    episodes = (await mine.list_page("episodes", session_id=session_id, limit=50))["items"]
    tool_rows = [row for row in episodes if (row.get("metadata") or {}).get("tool_traffic")]
    assert len(tool_rows) == (4 if tool_items else 0)
    assert len(episodes) == len(tool_rows) + 4


async def test_an_agents_tool_shows_the_model_engrams_problem(mine, caplog):
    caplog.set_level(logging.WARNING)
    model = ScriptedModel(
        call("remember", subject="Ann", predicate="likes", content="   "), say("done")
    )
    agent = Agent(name="a", model=model, tools=engram_tools(mine))
    await Runner.run(agent, "Remember nothing", run_config=NO_TRACES)
    [output] = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    assert "422" in output and "Invalid input" in output and "content" in output
    assert any(
        r.name == "engram_client.openai_agents" and "422" in r.getMessage() for r in caplog.records
    )


async def test_an_agents_tool_shows_the_model_an_unreachable_engram():
    async with AsyncEngramClient(closed_url(), retry=RetryPolicy(retries=0)) as down:
        model = ScriptedModel(call("search", query="Ann"), say("done"))
        agent = Agent(name="a", model=model, tools=engram_tools(down))
        await Runner.run(agent, "Find Ann", run_config=NO_TRACES)
    [output] = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    assert f"POST {down.base_url}/v1/search: " in output


def test_a_sync_transport_error_names_the_method_and_url():
    url = closed_url()
    with EngramClient(url, retry=RetryPolicy(retries=1, base_delay=0.01)) as engram:
        with pytest.raises(httpx.ConnectError, match=f"POST {url}/v1/search: "):
            engram.search("anything")
        with pytest.raises(httpx.ConnectError, match=f"GET {url}/v1/stats: "):
            engram.stats()


async def test_an_async_transport_error_names_the_method_and_url():
    url = closed_url()
    async with AsyncEngramClient(url, retry=RetryPolicy(retries=1, base_delay=0.01)) as engram:
        with pytest.raises(httpx.ConnectError, match=f"POST {url}/v1/facts: "):
            await engram.store_fact("Ann", "likes", "green")
        block = await engram.context("Ann", butler="chat")
        assert f"POST {url}/v1/context" in (block.warning or "")


async def test_search_stays_a_valid_filter_with_many_sessions_on_one_client(mine):
    for n in range(40):
        await EngramSession(f"many-{n}", mine).add_items([{"role": "user", "content": "hi"}])
    model = ScriptedModel(call("search", query="hi"), say("done"))
    await Runner.run(
        Agent(name="a", model=model, tools=engram_tools(mine)),
        "hi",
        session=EngramSession("many-last", mine),
        run_config=NO_TRACES,
    )
    [output] = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    assert output.startswith("[")
