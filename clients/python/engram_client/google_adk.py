"""Google's Agent Development Kit with Engram: `EngramMemoryService`, an ADK memory service
kept in Engram.

Install with `pip install './clients/python[google-adk]'`, then
`Runner(..., memory_service=EngramMemoryService(client))`, with `client` an
`AsyncEngramClient`; the `load_memory` and `preload_memory` tools read it.

Each (app, user) is one Engram butler, `app_name/user_id`: a user's events are episodes of
that butler, so their memories and the facts consolidation learns from them in that
butler's scope are never another user's (global facts and rules are everyone's). Each
event's text is one episode of its session (`session_id` the session's id, `occurred_at` its
time, the event's id, author and invocation in the episode's metadata); function calls,
their responses and thoughts are not stored. Adding a session again stores only the events
it has not stored yet. `search_memory` is Engram's search of the user's butler.
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from engram_client._http import without_none
from engram_client.client import AsyncEngramClient
from engram_client.models import SearchHit

__all__ = ["EngramMemoryService"]

STORE_CHUNK = 100
PAGE = 200
# Metadata key of the event's id, author and invocation.
EVENT = "adk_event"


def butler_of(app_name: str, user_id: str) -> str:
    """The Engram butler of an app's user."""
    return f"{app_name}/{user_id}"


class EngramMemoryService(BaseMemoryService):
    """ADK's memory service over Engram; a search gives at most `limit` memories."""

    def __init__(self, client: AsyncEngramClient, *, limit: int = 10) -> None:
        self.client = client
        self.limit = limit

    async def add_session_to_memory(self, session: Session) -> None:
        """Store the session's events that carry text and are not stored yet."""
        await self.add_events_to_memory(
            app_name=session.app_name,
            user_id=session.user_id,
            events=session.events,
            session_id=session.id,
        )

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store the events that carry text and are not stored yet, in order;
        `custom_metadata` goes into each episode's metadata."""
        butler = butler_of(app_name, user_id)
        stored = await self._stored_event_ids(butler, session_id)
        rows = [
            {
                "content": text,
                "butler": butler,
                "session_id": session_id,
                "occurred_at": datetime.fromtimestamp(event.timestamp, UTC).isoformat(),
                "metadata": {
                    **(custom_metadata or {}),
                    EVENT: {
                        "id": event.id,
                        "author": event.author,
                        "invocation_id": event.invocation_id,
                    },
                },
            }
            for event in events
            if (text := _text(event)) and not (event.id and event.id in stored)
        ]
        for start in range(0, len(rows), STORE_CHUNK):
            chunk = rows[start : start + STORE_CHUNK]
            await self.client.store_episodes([without_none(row) for row in chunk])

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories that best match `query`, best first."""
        found = await self.client.search(
            query, limit=self.limit, scope=butler_of(app_name, user_id)
        )
        return SearchMemoryResponse(memories=[_entry(hit) for hit in found.results if hit.content])

    async def _stored_event_ids(self, butler: str, session_id: str | None) -> set[str]:
        """The ids of the events stored as episodes of the butler (and session)."""
        rows = await self.client.list_all(
            "episodes", page_size=PAGE, butler=butler, session_id=session_id
        )
        events = [(row.get("metadata") or {}).get(EVENT) or {} for row in rows]
        return {event["id"] for event in events if event.get("id")}


def _text(event: Event) -> str:
    """The text the event says (its parts' text, without thoughts)."""
    if event.partial or not event.content or not event.content.parts:
        return ""
    return "\n".join(part.text for part in event.content.parts if part.text and not part.thought)


def _entry(hit: SearchHit) -> MemoryEntry:
    """A memory entry of a search hit: an episode's author and time, a fact's or rule's type."""
    extra: dict[str, Any] = hit.model_extra or {}
    event = (extra.get("metadata") or {}).get(EVENT) or {}
    author = event.get("author")
    return MemoryEntry(
        id=str(hit.id),
        content=types.Content(
            role="user" if author in (None, "user") else "model",
            parts=[types.Part(text=hit.content)],
        ),
        author=author,
        timestamp=extra.get("occurred_at") or extra.get("created_at"),
        custom_metadata={"memory_type": hit.memory_type},
    )
