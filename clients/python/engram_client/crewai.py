"""CrewAI with Engram: `EngramMemory`, a CrewAI `Memory` kept in Engram.

Install with `pip install './clients/python[crewai]'`, then
`Crew(..., memory=EngramMemory(client))`, with `client` an `EngramClient` (CrewAI calls its
memory from its own threads, so the blocking client).

CrewAI's own `Memory` has an LLM pick scopes and categories and embeds each record into a
local vector store; this one hands the text to Engram instead, which embeds it, searches it
(hybrid) and consolidates episodes into facts and rules. `remember` and `remember_many`
store each text as an episode of the memory's butler (and session, when given), the
categories, scope, importance, source and agent role in its metadata. `extract_memories`
keeps what a task produced whole (one episode: Engram's consolidation draws the facts from
it, so the crew needs no LLM for its memory). `recall` is Engram's search of the butler's
episodes and the global and butler's facts and rules, best first; `reset` deletes the
butler's (session's) episodes. The vector store's own operations (`forget`, `update`,
`tree`, `list_records`, ...) are not there.
"""

from typing import Any

from crewai.memory import MemoryMatch, MemoryRecord
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from engram_client.client import EngramClient
from engram_client.models import Episode, SearchHit

__all__ = ["EngramMemory"]

PAGE = 200


class _InEngram:
    """The storage CrewAI's `Memory` is given: the memories are in Engram, not here."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"EngramMemory keeps its memories in Engram and has no local store's {name!r}: "
            "use remember, remember_many, recall and reset"
        )


class EngramMemory(Memory):
    """CrewAI's `Memory` over Engram: episodes of `butler` (and `session_id`) in, Engram's
    search out."""

    butler: str = "crewai"
    session_id: str | None = None
    _client: EngramClient = PrivateAttr()

    def __init__(self, client: EngramClient, **fields: Any) -> None:
        fields.setdefault("storage", _InEngram())
        super().__init__(**fields)
        self._client = client

    def remember(
        self,
        content: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> MemoryRecord | None:
        """Store the text as an episode; the record as stored (None when read-only)."""
        records = self.remember_many(
            [content], scope, categories, metadata, importance, source, private, agent_role
        )
        return records[0] if records else None

    def remember_many(
        self,
        contents: list[str],
        scope: str | None = None,
        categories: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        importance: float | None = None,
        source: str | None = None,
        private: bool = False,
        agent_role: str | None = None,
        root_scope: str | None = None,
    ) -> list[MemoryRecord]:
        """Store each text as an episode, in one request; the records as stored."""
        if self.read_only or not contents:
            return []
        about = {
            "scope": scope,
            "categories": categories,
            "importance": importance,
            "source": source,
            "private": private or None,
            "agent_role": agent_role,
        }
        crew = {key: value for key, value in about.items() if value is not None}
        meta = {**(metadata or {}), **({"crewai": crew} if crew else {})}
        rows = [
            {"content": text, "butler": self.butler, "session_id": self.session_id}
            | ({"metadata": meta} if meta else {})
            for text in contents
        ]
        stored = self._client.store_episodes(
            [{k: v for k, v in row.items() if v is not None} for row in rows]
        )
        return [
            MemoryRecord(
                id=str(episode.id),
                content=episode.content,
                categories=categories or [],
                metadata=meta,
                source=source,
                private=private,
                created_at=episode.created_at,
            )
            for episode in stored
        ]

    def extract_memories(self, content: str) -> list[str]:
        """The content whole: Engram's consolidation draws the facts from the episode."""
        return [content] if content.strip() else []

    def recall(
        self,
        query: str,
        scope: str | None = None,
        categories: list[str] | None = None,
        limit: int = 10,
        depth: Any = "deep",
        source: str | None = None,
        include_private: bool = False,
    ) -> list[MemoryMatch]:
        """Engram's search for `query`: at most `limit` memories, best first."""
        found = self._client.search(query, limit=limit, scope=self.butler)
        return [_match(hit) for hit in found.results if hit.content]

    def reset(self, scope: str | None = None) -> None:
        """Delete the episodes of the memory's butler (and session); facts and rules
        consolidation learned from them stay."""
        for episode in self._episodes():
            self._client.request("DELETE", f"/v1/episodes/{episode.id}")

    def _episodes(self) -> list[Episode]:
        """Every live episode of the butler (and session)."""
        rows = self._client.list_all(
            "episodes", page_size=PAGE, butler=self.butler, session_id=self.session_id
        )
        episodes = [Episode.model_validate(row) for row in rows]
        return episodes


def _match(hit: SearchHit) -> MemoryMatch:
    """A CrewAI match of a search hit, its Engram type as its category."""
    score = hit.similarity if hit.similarity is not None else hit.fused_score or hit.rrf_score
    return MemoryMatch(
        record=MemoryRecord(
            id=str(hit.id), content=hit.content or "", categories=[hit.memory_type]
        ),
        score=float(score or 0.0),
        match_reasons=["engram"],
    )
