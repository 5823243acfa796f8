"""LlamaIndex with Engram: `EngramMemoryBlock`, a long-term memory block of its `Memory`.

Install with `pip install 'engram[llama-index]'`, then
`Memory.from_defaults(session_id="conv-1", memory_blocks=[EngramMemoryBlock(client=client)])`,
with `client` an `AsyncEngramClient`.

Each message is stored as an episode of the memory's session when the block first sees it:
when the memory builds the next prompt (a user message as it is asked, the reply before it
when the next message comes), or when the memory lets it go from its short-term queue.
`await block.aflush(memory)` stores what the block has not seen yet (the last reply): call
it when a conversation ends. For each prompt the block gives Engram's `# Memory Context`
(facts and rules about the latest user message) and the stored turns of other sessions that
best match it. Every call to Engram fails open: with Engram down or slow (more than `timeout`
seconds) the block logs one warning, gives nothing and leaves Engram alone for `pause`
seconds, and the chat goes on.
"""

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock, Memory
from llama_index.core.storage.chat_store.sql import MessageStatus

from engram_client.client import AsyncEngramClient

__all__ = ["EngramMemoryBlock"]

logger = logging.getLogger("engram_client.llama_index")
PAST_TURNS_HEADER = "\n## Past Conversation\n"
# Messages of a session the block remembers having stored, to store each once.
REMEMBERED = 500
T = TypeVar("T")


class EngramMemoryBlock(BaseMemoryBlock[str]):
    """Facts, rules and past turns from Engram for the latest message; stores each message of
    the conversation as an episode."""

    name: str = Field(default="engram", description="The name of the memory block.")
    client: AsyncEngramClient = Field(description="The Engram client to read and store with.")
    butler: str = Field(
        default="llama-index", description="The butler the episodes are stored under and read from."
    )
    past_turns: int = Field(default=3, ge=0, description="Past turns given, at most.")
    token_budget: int | None = Field(
        default=None, description="The context block's budget (server default)."
    )
    timeout: float = Field(
        default=2.0, gt=0, description="Seconds one call to Engram may take before it is dropped."
    )
    pause: float = Field(
        default=30.0, ge=0, description="Seconds the block leaves Engram alone after a failure."
    )
    _stored: dict[str, list[tuple[str, str]]] = PrivateAttr(default_factory=dict)
    _warned: bool = PrivateAttr(default=False)
    _paused_until: float = PrivateAttr(default=0.0)

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memory for the latest user message ('' when there is none, nothing fits or
        Engram cannot answer); stores the messages not stored yet first."""
        session_id = block_kwargs.get("session_id")
        if not await self._store(messages or [], session_id):
            return ""
        query = _latest_text(messages or [])
        if not query:
            return ""
        block = await self._guarded(
            self.client.context(
                query, butler=self.butler, token_budget=self.token_budget, fail_open=False
            )
        )
        if block is None:
            return ""
        text = block.context.strip() if block.items else ""
        if self.past_turns:
            others = {"session_id": {"$ne": session_id}} if session_id else None
            found = await self._guarded(
                self.client.search(
                    query,
                    types=["episode"],
                    scope=self.butler,
                    limit=self.past_turns,
                    filter=others,
                )
            )
            turns = (
                [f"- {' '.join((hit.content or '').split())}\n" for hit in found.results]
                if found
                else []
            )
            if turns:
                text += PAST_TURNS_HEADER + "".join(turns)
        return text.strip()

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store the messages the short-term memory let go that are not stored yet."""
        session_id = next(
            (m.additional_kwargs.get("session_id") for m in messages if m.additional_kwargs),
            None,
        )
        await self._store(messages, session_id)

    async def aflush(self, memory: Memory) -> None:
        """Store the messages of `memory`'s conversation the block has not stored yet (the
        last reply, which otherwise waits for the next message)."""
        messages = await memory.sql_store.get_messages(
            memory.session_id, status=MessageStatus.ACTIVE
        )
        await self._store(messages, memory.session_id)

    async def _store(self, messages: list[ChatMessage], session_id: str | None) -> bool:
        """Store the messages with text the block has not stored, in order; False when
        Engram could not take them."""
        seen = self._stored.setdefault(session_id or "", [])
        texts = [m for m in messages if m.content and m.content.strip()]
        new = _unseen(seen, [(str(m.role.value), m.content or "") for m in texts])
        if not new:
            return True
        items = [
            {"content": m.content, "butler": self.butler, "metadata": {"role": str(m.role.value)}}
            | ({"session_id": session_id} if session_id else {})
            for m in texts[len(texts) - len(new) :]
        ]
        if await self._guarded(self.client.store_episodes(items)) is None:
            return False
        seen += new
        del seen[:-REMEMBERED]
        return True

    async def _guarded(self, call: Coroutine[Any, Any, T]) -> T | None:
        """The call's answer, or None (and one warning) when Engram fails or is too slow;
        None at once while the block pauses after a failure."""
        if time.monotonic() < self._paused_until:
            call.close()
            return None
        try:
            return await asyncio.wait_for(call, self.timeout)
        except Exception as error:
            self._paused_until = time.monotonic() + self.pause
            if not self._warned:
                self._warned = True
                said = str(error) or f"no answer within {self.timeout} s"
                logger.warning(
                    "Engram at %s unavailable, the memory block gives nothing for %s s: %s",
                    self.client.base_url,
                    self.pause,
                    said,
                )
            return None


def _unseen(seen: list[tuple[str, str]], messages: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The messages after the longest run of them that ends what was stored; none when all of
    them are a stretch of what was stored (messages the short-term memory let go)."""
    count = len(messages)
    if count and any(seen[i : i + count] == messages for i in range(len(seen) - count + 1)):
        return []
    for overlap in range(min(len(seen), count), 0, -1):
        if seen[-overlap:] == messages[:overlap]:
            return messages[overlap:]
    return messages


def _latest_text(messages: list[ChatMessage]) -> str:
    """The text of the latest user message, else of the latest message with text."""
    for message in reversed(messages):
        if message.role.value == "user" and message.content and message.content.strip():
            return message.content
    for message in reversed(messages):
        if message.content and message.content.strip():
            return message.content
    return ""
