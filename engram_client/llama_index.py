"""LlamaIndex with Engram: `EngramMemoryBlock`, a long-term memory block of its `Memory`.

Install with `pip install 'engram[llama-index]'`, then
`Memory.from_defaults(session_id="conv-1", memory_blocks=[EngramMemoryBlock(client=client)])`,
with `client` an `AsyncEngramClient`.

Messages that leave the memory's short-term queue (when the chat history outgrows its share
of `token_limit`) are stored as episodes of the memory's session. For each prompt the block
gives Engram's `# Memory Context` (facts and rules about the latest user message) and the
stored turns of any session that best match it.
"""

from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.core.memory.memory import BaseMemoryBlock

from engram_client.client import AsyncEngramClient

__all__ = ["EngramMemoryBlock"]

PAST_TURNS_HEADER = "\n## Past Conversation\n"


class EngramMemoryBlock(BaseMemoryBlock[str]):
    """Facts, rules and past turns from Engram for the latest message; stores the messages
    the short-term memory lets go as episodes."""

    name: str = Field(default="engram", description="The name of the memory block.")
    client: AsyncEngramClient = Field(description="The Engram client to read and store with.")
    butler: str = Field(
        default="llama-index", description="The butler the episodes are stored under and read from."
    )
    past_turns: int = Field(default=3, ge=0, description="Past turns given, at most.")
    token_budget: int | None = Field(
        default=None, description="The context block's budget (server default)."
    )

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memory for the latest user message ('' when there is none or nothing fits)."""
        query = _latest_text(messages or [])
        if not query:
            return ""
        block = await self.client.context(query, butler=self.butler, token_budget=self.token_budget)
        text = block.context.strip() if block.items else ""
        if self.past_turns:
            found = await self.client.search(
                query, types=["episode"], scope=self.butler, limit=self.past_turns
            )
            turns = [f"- {' '.join((hit.content or '').split())}\n" for hit in found.results]
            if turns:
                text += PAST_TURNS_HEADER + "".join(turns)
        return text.strip()

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store the messages with text as episodes of their session, in order."""
        items = [
            {
                "content": message.content,
                "butler": self.butler,
                "session_id": message.additional_kwargs.get("session_id"),
                "metadata": {"role": str(message.role.value)},
            }
            for message in messages
            if message.content and message.content.strip()
        ]
        if items:
            await self.client.store_episodes(
                [{k: v for k, v in item.items() if v is not None} for item in items]
            )


def _latest_text(messages: list[ChatMessage]) -> str:
    """The text of the latest user message, else of the latest message with text."""
    for message in reversed(messages):
        if message.role.value == "user" and message.content and message.content.strip():
            return message.content
    for message in reversed(messages):
        if message.content and message.content.strip():
            return message.content
    return ""
