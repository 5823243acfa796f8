"""Pydantic AI with Engram against a live server: agents on the framework's test models
remember through Engram's toolset, and a later agent finds it."""

import json
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from engram_client.pydantic_ai import engram_toolset
from tests.support.readme import CLIENTS, examples


def calls_then_reports(tool: str, **arguments: Any) -> FunctionModel:
    """A model that calls `tool` once, then answers with the tool's return value as JSON."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [
            part
            for message in messages
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]
        if not returned:
            return ModelResponse(parts=[ToolCallPart(tool, arguments)])
        return ModelResponse(parts=[TextPart(json.dumps(returned[-1].content))])

    return FunctionModel(respond)


async def test_a_later_agent_finds_what_an_earlier_one_remembered(engram):
    first = Agent(
        calls_then_reports(
            "remember",
            subject="Ann",
            predicate="favourite colour",
            content="Ann's favourite colour is green",
        ),
        toolsets=[engram_toolset(engram, butler="chat")],
    )
    stored = json.loads((await first.run("Remember that Ann likes green")).output)
    assert stored["content"] == "Ann's favourite colour is green"

    for tool, arguments in (
        ("search", {"query": "What colour does Ann like?"}),
        ("recall", {"topic": "Ann's favourite colour"}),
    ):
        later = Agent(
            calls_then_reports(tool, **arguments), toolsets=[engram_toolset(engram, butler="chat")]
        )
        hits = json.loads((await later.run("What colour does Ann like?")).output)
        assert hits[0] == {
            "type": "fact",
            "id": stored["id"],
            "content": "Ann's favourite colour is green",
        }
    elsewhere = Agent(
        calls_then_reports("search", query="What colour does Ann like?"),
        toolsets=[engram_toolset(engram, butler="other")],
    )
    assert json.loads((await elsewhere.run("What colour does Ann like?")).output) == []


async def test_the_test_model_calls_every_tool_with_arguments_from_their_schemas(engram):
    agent = Agent(TestModel(), toolsets=[engram_toolset(engram)])
    result = await agent.run("Use your memory")
    called = {
        part.tool_name
        for message in result.all_messages()
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }
    assert called == {"search", "recall", "remember"}
    assert len((await engram.list_page("facts"))["items"]) == 1


def test_the_documented_example_compiles():
    [example] = examples("Pydantic AI", "python", CLIENTS)
    compile(example, "docs/clients.md", "exec")
