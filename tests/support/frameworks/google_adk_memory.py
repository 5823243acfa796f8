"""Google ADK: a Runner whose sessions go into `EngramMemoryService`; in a later session a
scripted offline model calls `load_memory`. Prints the episodes stored, what the model was
read from `load_memory` for Ann and for Bob, and what `search_memory` answered."""

import asyncio
import json
import sys
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory
from google.genai import types

from engram_client import AsyncEngramClient, RetryPolicy
from engram_client.google_adk import EngramMemoryService

ANN = "Ann's favourite colour is green"
QUESTION = "What colour does Ann like?"


class LooksUpThenReports(BaseLlm):
    """Asked anything, calls `load_memory` with the question; given the tool's answer,
    replies with it, word for word, as the model read it."""

    model: str = "looks-up-then-reports"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        answers = [part.function_response for part in last.parts or [] if part.function_response]
        if answers:
            # ADK gives a tool's non-dict answer as {"result": its text}.
            reply = types.Part(text=str((answers[0].response or {}).get("result")))
        else:
            question = " ".join(part.text or "" for part in last.parts or [])
            call = types.FunctionCall(name="load_memory", args={"query": question})
            reply = types.Part(function_call=call)
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


class Says(BaseLlm):
    """Answers everything with `text`."""

    model: str = "says"
    text: str

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=self.text)]))


async def ask(runner: Runner, user_id: str, text: str) -> tuple[str, str]:
    """A new session of `user_id` with one message: its id and the agent's last reply."""
    session = await runner.session_service.create_session(app_name="notes", user_id=user_id)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    replies = [
        part.text
        async for event in runner.run_async(
            user_id=user_id, session_id=session.id, new_message=message
        )
        if event.content
        for part in event.content.parts or []
        if part.text
    ]
    return session.id, replies[-1]


async def main(url: str, key: str) -> dict[str, Any]:
    """The observations, by name."""
    seen: dict[str, Any] = {}
    async with AsyncEngramClient(url, api_key=key, retry=RetryPolicy(retries=2)) as engram:
        memory = EngramMemoryService(engram)
        sessions = InMemorySessionService()

        def runner(model: BaseLlm, tools: list[Any]) -> Runner:
            agent = LlmAgent(name="notes", model=model, tools=tools)
            return Runner(
                app_name="notes", agent=agent, session_service=sessions, memory_service=memory
            )

        session_id, seen["told_reply"] = await ask(runner(Says(text="Noted."), []), "ann", ANN)
        session = await sessions.get_session(app_name="notes", user_id="ann", session_id=session_id)
        assert session is not None
        await memory.add_session_to_memory(session)
        await memory.add_session_to_memory(session)
        seen["session_id"] = session_id
        seen["episodes"] = [
            {k: row[k] for k in ("content", "session_id", "butler")}
            for row in (await engram.list_page("episodes", butler="notes/ann"))["items"]
        ]
        asks = runner(LooksUpThenReports(), [load_memory])
        seen["ann_loaded"] = (await ask(asks, "ann", QUESTION))[1]
        seen["bob_loaded"] = (await ask(asks, "bob", QUESTION))[1]
        found = await memory.search_memory(app_name="notes", user_id="ann", query="Ann colour")
        seen["searched"] = [
            {
                "text": entry.content.parts[0].text if entry.content.parts else None,
                "role": entry.content.role,
                "author": entry.author,
                "timestamp": entry.timestamp,
                "id": entry.id,
                "custom_metadata": entry.custom_metadata,
            }
            for entry in found.memories
        ]
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:3]))))
