"""Pydantic AI with Engram: `engram_toolset`, a toolset of memory tools for an agent.

Install with `pip install 'engram[pydantic-ai]'`, then
`Agent(model, toolsets=[engram_toolset(client)])`, with `client` an `AsyncEngramClient`.
"""

from typing import Any

from pydantic_ai import FunctionToolset

from engram_client._memory_tools import RECALL, REMEMBER, SEARCH, MemoryTools
from engram_client.client import AsyncEngramClient

__all__ = ["engram_toolset"]


def engram_toolset(client: AsyncEngramClient, *, butler: str | None = None) -> FunctionToolset:
    """A toolset of `search`, `recall` and `remember`; `butler` keeps them to that butler's
    memories (and the global ones) and stores its facts in its scope."""
    memory = MemoryTools(client, butler)

    async def search(query: str, limit: int = 5) -> list[dict[str, Any]]:
        return await memory.search(query, limit)

    async def recall(topic: str, limit: int = 5) -> list[dict[str, Any]]:
        return await memory.recall(topic, limit)

    async def remember(subject: str, predicate: str, content: str) -> dict[str, Any]:
        return await memory.remember(subject, predicate, content)

    toolset: FunctionToolset = FunctionToolset(id="engram")
    for function, description in ((search, SEARCH), (recall, RECALL), (remember, REMEMBER)):
        toolset.add_function(function, takes_ctx=False, description=description)
    return toolset
