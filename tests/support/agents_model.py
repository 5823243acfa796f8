"""A scripted model for the OpenAI Agents SDK: each answer a tool call or a reply, given in
advance, so the adapters' tests run offline."""

import json
from collections.abc import Callable
from typing import Any

from agents import ModelResponse, RunConfig, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

Turn = Callable[[list[Any]], list[Any]]
NO_TRACES = RunConfig(tracing_disabled=True)


class ScriptedModel(Model):
    """A model whose n-th answer is `turns[n]` applied to the input it was given."""

    def __init__(self, *turns: Turn) -> None:
        self.turns = list(turns)
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        **_: Any,
    ) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        self.inputs.append(items)
        return ModelResponse(output=self.turns.pop(0)(items), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def call(name: str, **arguments: Any) -> Turn:
    return lambda _: [
        ResponseFunctionToolCall(
            type="function_call", call_id=f"call-{name}", name=name, arguments=json.dumps(arguments)
        )
    ]


def say(text: str | Callable[[list[Any]], str]) -> Turn:
    return lambda items: [
        ResponseOutputMessage(
            type="message",
            id="msg",
            role="assistant",
            status="completed",
            content=[
                ResponseOutputText(
                    type="output_text", annotations=[], text=text(items) if callable(text) else text
                )
            ],
        )
    ]


def tool_outputs(items: list[Any]) -> str:
    """The outputs of the tool calls the model was given, as one JSON list."""
    return json.dumps(
        [json.loads(i["output"]) for i in items if i.get("type") == "function_call_output"]
    )
