"""The OpenAI Agents SDK with Engram: `EngramSession`, a session whose conversation items are
Engram episodes, and `engram_tools`, memory tools for an agent.

Install with `pip install 'engram[openai-agents]'`, then
`Runner.run(agent, "Hi", session=EngramSession("conv-1", client))` and
`Agent(..., tools=engram_tools(client))`, with `client` an `AsyncEngramClient`.

Each conversation item is one episode of the session (`session_id` the session's id, the
`butler` given): a message whose content is text is stored as that text, with its other fields
in the episode's metadata; any other item (a tool call, its output, reasoning) is stored as its
JSON. So Engram searches and consolidates the conversation like any other, and items come back
as they were added. Being episodes, items expire after Engram's `episode_ttl_days` (what
consolidation learned from them stays as facts and rules); `pop_item` and `clear_session`
delete them for good.
"""

import json
from typing import Any

from agents import Tool, function_tool
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from engram_client._memory_tools import RECALL, REMEMBER, SEARCH, MemoryTools
from engram_client.client import AsyncEngramClient
from engram_client.models import Episode

__all__ = ["EngramSession", "engram_tools"]

# Episodes stored by one request (the server's default `max_batch_size` is larger).
STORE_CHUNK = 100
PAGE = 200
# Metadata key of the fields of an item stored as its text.
ITEM_FIELDS = "agents_item"


class EngramSession:
    """The SDK's `Session` protocol over the episodes of one Engram session."""

    def __init__(
        self,
        session_id: str,
        client: AsyncEngramClient,
        *,
        butler: str = "openai-agents",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.butler = butler
        self.session_settings: SessionSettings | None = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(session_settings)
        )

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first; with `limit` (by default the settings' limit),
        the latest `limit` of them."""
        limit = resolve_session_limit(limit, self.session_settings)
        episodes = await self._episodes()
        if limit is not None:
            episodes = episodes[max(len(episodes) - limit, 0) :]
        return [_item(episode) for episode in episodes]

    async def add_items(self, items: list[Any]) -> None:
        """Store the items after those the session has, in order."""
        rows = [
            {"butler": self.butler, "session_id": self.session_id, **_episode(item)}
            for item in items
        ]
        for start in range(0, len(rows), STORE_CHUNK):
            await self.client.store_episodes(rows[start : start + STORE_CHUNK])

    async def pop_item(self) -> Any | None:
        """Delete the latest item and return it; None when the session is empty."""
        episodes = await self._episodes()
        if not episodes:
            return None
        await self.client.request("DELETE", f"/v1/episodes/{episodes[-1].id}")
        return _item(episodes[-1])

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        for episode in await self._episodes():
            await self.client.request("DELETE", f"/v1/episodes/{episode.id}")

    async def _episodes(self) -> list[Episode]:
        """Every live episode of the session, in the order they were stored."""
        episodes: list[Episode] = []
        cursor = None
        while True:
            page = await self.client.list_page(
                "episodes",
                limit=PAGE,
                cursor=cursor,
                butler=self.butler,
                session_id=self.session_id,
            )
            episodes += [Episode.model_validate(row) for row in page["items"]]
            cursor = page.get("next_cursor")
            if not cursor:
                return sorted(episodes, key=_sequence)


def _sequence(episode: Episode) -> int:
    """Where the episode was stored among the others."""
    sequence: int = (episode.model_extra or {})["sequence"]
    return sequence


def _episode(item: Any) -> dict[str, Any]:
    """The episode's content and metadata for one item."""
    item = dict(item)
    text = item.get("content")
    if isinstance(text, str) and text.strip() and "\x00" not in text:
        return {
            "content": text,
            "metadata": {ITEM_FIELDS: {k: v for k, v in item.items() if k != "content"}},
        }
    return {"content": json.dumps(item, ensure_ascii=False)}


def _item(episode: Episode) -> Any:
    """The item an episode holds."""
    fields = (episode.model_extra or {}).get("metadata", {}).get(ITEM_FIELDS)
    if fields is not None:
        return {**fields, "content": episode.content}
    return json.loads(episode.content)


def engram_tools(client: AsyncEngramClient, *, butler: str | None = None) -> list[Tool]:
    """`search`, `recall` and `remember` tools for an agent; `butler` keeps them to that
    butler's memories (and the global ones) and stores its facts in its scope."""
    memory = MemoryTools(client, butler)

    async def search(query: str, limit: int = 5) -> str:
        return json.dumps(await memory.search(query, limit), ensure_ascii=False)

    async def recall(topic: str, limit: int = 5) -> str:
        return json.dumps(await memory.recall(topic, limit), ensure_ascii=False)

    async def remember(subject: str, predicate: str, content: str) -> str:
        return json.dumps(await memory.remember(subject, predicate, content), ensure_ascii=False)

    return [
        function_tool(search, description_override=SEARCH),
        function_tool(recall, description_override=RECALL),
        function_tool(remember, description_override=REMEMBER),
    ]
