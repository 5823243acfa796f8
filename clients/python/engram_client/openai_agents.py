"""The OpenAI Agents SDK with Engram: `EngramSession`, a session whose conversation items are
Engram episodes, and `engram_tools`, memory tools for an agent.

Install with `pip install 'engram[openai-agents]'`, then
`Runner.run(agent, "Hi", session=EngramSession("conv-1", client))` and
`Agent(..., tools=engram_tools(client))`, with `client` an `AsyncEngramClient`.

Each message is one episode of the session (`session_id` the session's id, the `butler`
given), stored as its text, with its other fields in the episode's metadata, so Engram
searches and consolidates the conversation like any other and items come back as they were
added. Tool calls, their outputs and reasoning are not what was said: they are not stored,
unless `tool_items=True` keeps them, each as its JSON with the metadata `tool_traffic: true`.
Being episodes, items expire after Engram's `episode_ttl_days` (what consolidation learned
from them stays as facts and rules); `pop_item` and `clear_session` delete them for good.

The `search` tool never answers with the current turn of an `EngramSession` on the same
client (the question being asked and what followed it; of the 16 sessions that asked last)
nor with tool traffic. A tool that
Engram refuses or cannot reach answers the model with Engram's problem (status, title,
detail) and logs it at warning.
"""

import json
import logging
import weakref
from typing import Any

from agents import RunContextWrapper, Tool, function_tool
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from engram_client._http import EngramError
from engram_client._memory_tools import RECALL, REMEMBER, SEARCH, MemoryTools
from engram_client.client import AsyncEngramClient
from engram_client.models import Episode

__all__ = ["EngramSession", "engram_tools"]

# Episodes stored by one request (the server's default `max_batch_size` is larger).
STORE_CHUNK = 100
PAGE = 200
# Metadata key of the fields of an item stored as its text.
ITEM_FIELDS = "agents_item"
# Metadata key marking an item that is tool traffic (kept only with `tool_items=True`).
TOOL_TRAFFIC = "tool_traffic"
ROLES = frozenset({"user", "assistant", "system", "developer"})
logger = logging.getLogger("engram_client.openai_agents")
# Sessions per client whose current turn search leaves out, latest first (a filter takes at
# most 64 conditions).
CURRENT_TURNS = 16
# Per client: when the current turn of each (butler, session id) began (server time).
_TURNS: "weakref.WeakKeyDictionary[AsyncEngramClient, dict[tuple[str, str], str]]" = (
    weakref.WeakKeyDictionary()
)


class EngramSession:
    """The SDK's `Session` protocol over the episodes of one Engram session."""

    def __init__(
        self,
        session_id: str,
        client: AsyncEngramClient,
        *,
        butler: str = "openai-agents",
        session_settings: SessionSettings | dict[str, Any] | None = None,
        tool_items: bool = False,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.butler = butler
        self.tool_items = tool_items
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
        """Store the items after those the session has, in order (tool traffic only with
        `tool_items`); a user message begins a new turn."""
        kept = [dict(item) for item in items]
        kept = [item for item in kept if self.tool_items or _is_message(item)]
        rows = [
            {"butler": self.butler, "session_id": self.session_id, **_episode(item)}
            for item in kept
        ]
        stored: list[Episode] = []
        for start in range(0, len(rows), STORE_CHUNK):
            stored += await self.client.store_episodes(rows[start : start + STORE_CHUNK])
        asked = [ep for item, ep in zip(kept, stored, strict=True) if item.get("role") == "user"]
        if asked:
            turns = _TURNS.setdefault(self.client, {})
            turns.pop((self.butler, self.session_id), None)
            turns[(self.butler, self.session_id)] = asked[0].created_at.isoformat()
            for oldest in list(turns)[:-CURRENT_TURNS]:
                del turns[oldest]

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
        _TURNS.get(self.client, {}).pop((self.butler, self.session_id), None)

    async def _episodes(self) -> list[Episode]:
        """Every live episode of the session, in the order they were stored."""
        rows = await self.client.list_all(
            "episodes", page_size=PAGE, butler=self.butler, session_id=self.session_id
        )
        episodes = [Episode.model_validate(row) for row in rows]
        return sorted(episodes, key=_sequence)


def _sequence(episode: Episode) -> int:
    """Where the episode was stored among the others."""
    sequence: int = (episode.model_extra or {})["sequence"]
    return sequence


def _is_message(item: dict[str, Any]) -> bool:
    """Whether the item is something said (a message), not tool traffic or reasoning."""
    return item.get("role") in ROLES and item.get("type", "message") == "message"


def _text(content: Any) -> str | None:
    """A message's text: its content, or the text of its parts."""
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        content = "\n".join(part for part in parts if isinstance(part, str))
    if isinstance(content, str) and content.strip() and "\x00" not in content:
        return content
    return None


def _episode(item: dict[str, Any]) -> dict[str, Any]:
    """The episode's content and metadata for one item."""
    text = _text(item.get("content")) if _is_message(item) else None
    if text is None:
        marked = {} if _is_message(item) else {"metadata": {TOOL_TRAFFIC: True}}
        return {"content": json.dumps(item, ensure_ascii=False), **marked}
    if isinstance(item.get("content"), str):
        item = {k: v for k, v in item.items() if k != "content"}
    return {"content": text, "metadata": {ITEM_FIELDS: item}}


def _item(episode: Episode) -> Any:
    """The item an episode holds."""
    fields = (episode.model_extra or {}).get("metadata", {}).get(ITEM_FIELDS)
    if fields is not None:
        return fields if "content" in fields else {**fields, "content": episode.content}
    return json.loads(episode.content)


def _not_current(client: AsyncEngramClient) -> dict[str, Any]:
    """The search filter leaving out tool traffic and the current turn of every session."""
    current = [
        {"$not": {"session_id": session_id, "created_at": {"$gte": began}}}
        for (_, session_id), began in _TURNS.get(client, {}).items()
    ]
    return {"$and": [{f"metadata.{TOOL_TRAFFIC}": {"$ne": True}}, *current]}


def _tool_error(_: RunContextWrapper[Any], error: Exception) -> str:
    """What the model reads when a tool fails: Engram's problem when it gave one."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, EngramError):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, EngramError):
        problem = cause.problem
        title = problem.get("title") or "Error"
        said = f"Engram answered {cause.status} {title}: {problem.get('detail') or title}"
    else:
        said = f"The memory tool failed: {error}"
    logger.warning("%s", said)
    return said


def engram_tools(client: AsyncEngramClient, *, butler: str | None = None) -> list[Tool]:
    """`search`, `recall` and `remember` tools for an agent; `butler` keeps them to that
    butler's memories (and the global ones) and stores its facts in its scope."""
    memory = MemoryTools(client, butler, search_filter=lambda: _not_current(client))

    async def search(query: str, limit: int = 5) -> str:
        return json.dumps(await memory.search(query, limit), ensure_ascii=False)

    async def recall(topic: str, limit: int = 5) -> str:
        return json.dumps(await memory.recall(topic, limit), ensure_ascii=False)

    async def remember(subject: str, predicate: str, content: str) -> str:
        return json.dumps(await memory.remember(subject, predicate, content), ensure_ascii=False)

    return [
        function_tool(search, description_override=SEARCH, failure_error_function=_tool_error),
        function_tool(recall, description_override=RECALL, failure_error_function=_tool_error),
        function_tool(remember, description_override=REMEMBER, failure_error_function=_tool_error),
    ]
