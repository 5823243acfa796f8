"""The search / recall / remember tools every framework adapter gives an agent: what each
does against Engram and the words the model reads about it."""

from collections.abc import Callable
from typing import Any

from engram_client.client import AsyncEngramClient

SEARCH = (
    "Search long-term memory (past conversations, facts and rules) by meaning and "
    "keywords. Use it to look up what was said or learned before."
)
RECALL = "Recall the facts and rules most worth knowing about a topic before you act, best first."
REMEMBER = (
    "Remember a durable fact as subject / predicate / content, e.g. ('Ann', "
    "'favourite colour', 'Ann's favourite colour is green'). A newer fact with the same "
    "subject and predicate replaces the old one, so store corrections the same way."
)
DEFAULT_LIMIT = 5
# Fact predicate of the tool's facts when the model gives none.
NOTE = "note"


class MemoryTools:
    """The three tools over one client; `butler` keeps them to the facts and rules of scope
    'global' or `butler` and the butler's episodes, and stores facts in that scope;
    `search_filter` gives the filter each search adds (None: none)."""

    def __init__(
        self,
        client: AsyncEngramClient,
        butler: str | None = None,
        *,
        search_filter: Callable[[], dict[str, Any] | None] = lambda: None,
    ) -> None:
        self.client = client
        self.butler = butler
        self.search_filter = search_filter

    async def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
        """The hits for `query`: type, id and content, best first."""
        found = await self.client.search(
            query, limit=limit, scope=self.butler, filter=self.search_filter()
        )
        return [
            {"type": hit.memory_type, "id": str(hit.id), "content": hit.content}
            for hit in found.results
        ]

    async def recall(self, topic: str, limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
        """The facts and rules about `topic`: type, id and content, best first."""
        found = await self.client.recall(topic, limit=limit, scope=self.butler)
        return [
            {"type": hit.memory_type, "id": str(hit.id), "content": hit.content}
            for hit in found.results
        ]

    async def remember(self, subject: str, predicate: str, content: str) -> dict[str, Any]:
        """Store a fact (in the butler's scope, when set); the fact as stored."""
        fields = {"scope": self.butler, "source_butler": self.butler} if self.butler else {}
        fact = await self.client.store_fact(subject, predicate or NOTE, content, **fields)
        return {
            "id": str(fact.id),
            "subject": fact.subject,
            "predicate": fact.predicate,
            "content": fact.content,
        }
