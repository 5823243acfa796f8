"""AutoGen: an AssistantAgent on AutoGen's replay model with `EngramMemory`; prints what
reached the model, what the memory found, stored and cleared, and what an agent whose Engram
is down answered."""

import asyncio
import json
import sys
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.models import SystemMessage
from autogen_ext.models.replay import ReplayChatCompletionClient

from engram_client import AsyncEngramClient, RetryPolicy
from engram_client.autogen import EngramMemory

ANN = "Ann's favourite colour is green"
QUESTION = "What colour does Ann like?"


def system_messages(model: ReplayChatCompletionClient) -> list[str]:
    """The system messages of the model's first call."""
    return [
        str(message.content)
        for message in model.create_calls[0]["messages"]
        if isinstance(message, SystemMessage)
    ]


async def asked(memory: EngramMemory, reply: str) -> dict[str, Any]:
    """An agent with the memory asked QUESTION: its reply, the memories it queried and the
    system messages its model got."""
    model = ReplayChatCompletionClient([reply])
    agent = AssistantAgent("assistant", model_client=model, memory=[memory])
    result = await agent.run(task=QUESTION)
    queried = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    return {
        "reply": result.messages[-1].to_text(),
        "queried": [
            {"content": c.content, "type": (c.metadata or {}).get("type")}
            for event in queried
            for c in event.content
        ],
        "system": system_messages(model),
    }


async def main(url: str, key: str) -> dict[str, Any]:
    """The observations, by name."""
    seen: dict[str, Any] = {}
    async with AsyncEngramClient(url, api_key=key, retry=RetryPolicy(retries=2)) as engram:
        memory = EngramMemory(engram, butler="assistant", session_id="monday")
        await memory.add(MemoryContent(content=ANN, mime_type=MemoryMimeType.TEXT))
        await memory.add(
            MemoryContent(
                content={"city": "Lyon"}, mime_type=MemoryMimeType.JSON, metadata={"n": 1}
            )
        )
        seen["remembered"] = await asked(memory, "Ann likes green")
        seen["episodes"] = [
            {k: row[k] for k in ("content", "session_id", "metadata")}
            for row in (await engram.list_page("episodes", butler="assistant"))["items"]
        ]
        seen["query"] = [c.content for c in (await memory.query("Ann colour")).results]
        elsewhere = EngramMemory(engram, butler="other")
        seen["elsewhere"] = [c.content for c in (await elsewhere.query(QUESTION)).results]
        await memory.clear()
        seen["cleared_query"] = [c.content for c in (await memory.query(QUESTION)).results]
        seen["cleared"] = await asked(memory, "I do not know")
    async with AsyncEngramClient("http://127.0.0.1:9", retry=RetryPolicy(retries=0)) as down:
        seen["down"] = await asked(EngramMemory(down), "Hello")
    return seen


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:3]))))
