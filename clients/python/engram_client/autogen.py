"""AutoGen with Engram: `EngramMemory`, an `autogen_core.memory.Memory` kept in Engram.

Install with `pip install './clients/python[autogen]'`, then
`AssistantAgent(..., memory=[EngramMemory(client)])`, with `client` an `AsyncEngramClient`.

`add` stores the content as an episode of the memory's butler (and session, when given), its
MIME type and metadata in the episode's metadata; `query` is Engram's search over that
butler's episodes and the global and butler's facts and rules. Before each model call the
agent asks `update_context`, which searches with the latest user message and adds the hits
to the model context as one `SystemMessage`. It fails open: when Engram refuses or cannot be
reached the agent goes on without memories and the problem is logged at warning.
"""

import json
import logging
from typing import Any

import httpx
from autogen_core import CancellationToken, Image
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage, UserMessage

from engram_client._http import EngramError
from engram_client.client import AsyncEngramClient
from engram_client.models import Episode

__all__ = ["EngramMemory"]

logger = logging.getLogger("engram_client.autogen")
PAGE = 200
HEADER = "Relevant memories from Engram, best first:"


class EngramMemory(Memory):
    """AutoGen's `Memory` over Engram: episodes of `butler` (and `session_id`) in, search out;
    `limit` memories at most in the model context."""

    def __init__(
        self,
        client: AsyncEngramClient,
        *,
        butler: str = "autogen",
        session_id: str | None = None,
        limit: int = 5,
        name: str = "engram",
    ) -> None:
        self.client = client
        self.butler = butler
        self.session_id = session_id
        self.limit = limit
        self.name = name

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        """Store the content as an episode (text; a dict as JSON)."""
        mime = content.mime_type
        metadata = {
            **(content.metadata or {}),
            "mime_type": mime.value if isinstance(mime, MemoryMimeType) else mime,
        }
        await self.client.store_episode(
            _text(content.content),
            butler=self.butler,
            session_id=self.session_id,
            metadata=metadata,
        )

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        """The memories that best match `query` (`limit=` to change how many), best first;
        each one's metadata holds its Engram type, id and score."""
        text = query if isinstance(query, str) else _text(query.content)
        found = await self.client.search(
            text, limit=kwargs.get("limit", self.limit), scope=self.butler
        )
        return MemoryQueryResult(
            results=[
                MemoryContent(
                    content=hit.content or "",
                    mime_type=MemoryMimeType.TEXT,
                    metadata={
                        "type": hit.memory_type,
                        "id": str(hit.id),
                        "score": hit.fused_score or hit.rrf_score or hit.similarity,
                    },
                )
                for hit in found.results
            ]
        )

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        """Add the memories that match the latest user message to the context, as one
        `SystemMessage`; nothing when there are none or Engram fails."""
        messages = await model_context.get_messages()
        asked = [m.content for m in messages if isinstance(m, UserMessage)]
        if not asked or not isinstance(asked[-1], str) or not asked[-1].strip():
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        try:
            found = await self.query(asked[-1])
        except (EngramError, httpx.HTTPError) as error:
            logger.warning("Engram gave no memories: %s", error)
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        if found.results:
            lines = [f"{n}. {_text(memory.content)}" for n, memory in enumerate(found.results, 1)]
            await model_context.add_message(SystemMessage(content="\n".join([HEADER, *lines])))
        return UpdateContextResult(memories=found)

    async def clear(self) -> None:
        """Delete the episodes of the memory's butler (of its session, when given); facts and
        rules consolidation learned from them stay."""
        for episode in await self._episodes():
            await self.client.request("DELETE", f"/v1/episodes/{episode.id}")

    async def close(self) -> None:
        """Nothing to release: the client belongs to the caller, who closes it."""

    async def _episodes(self) -> list[Episode]:
        """Every live episode of the butler (and session)."""
        rows = await self.client.list_all(
            "episodes", page_size=PAGE, butler=self.butler, session_id=self.session_id
        )
        episodes = [Episode.model_validate(row) for row in rows]
        return episodes


def _text(content: str | bytes | dict[str, Any] | Image) -> str:
    """What is stored for a content: text as is, a dict as JSON, bytes decoded as UTF-8."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return json.dumps(content, ensure_ascii=False, sort_keys=True)
    if isinstance(content, bytes):
        return content.decode("utf-8", errors="replace")
    raise TypeError("EngramMemory stores text, JSON objects and UTF-8 bytes, not images")
