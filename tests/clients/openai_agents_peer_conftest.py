"""conftest.py of the OpenAI Agents SDK's session tests when they run against Engram (copied
beside them by tests/clients/test_openai_agents_peer_suite.py): every `SQLiteSession` they make
is an EngramSession, and each test has a tenant of its own."""

import itertools
import json
import os
from typing import Any

import pytest

from engram_client import AsyncEngramClient
from engram_client.openai_agents import EngramSession

URL = os.environ["ENGRAM_URL"]
KEYS = itertools.cycle(json.loads(os.environ["ENGRAM_PEER_KEYS"]))
_key = {"current": ""}


@pytest.fixture(autouse=True)
def _tenant_of_its_own() -> None:
    _key["current"] = next(KEYS)


class PeerSession(EngramSession):
    """An EngramSession that opens a client for each call, so it works on any event loop
    (the tests' `run_sync` runs on a loop of its own)."""

    def __init__(
        self, session_id: str, db_path: Any = None, session_settings: Any = None, **_: Any
    ) -> None:
        super().__init__(
            session_id, AsyncEngramClient(URL), butler="peer", session_settings=session_settings
        )
        self.key = _key["current"]

    async def _call(self, name: str, *args: Any) -> Any:
        async with AsyncEngramClient(URL, api_key=self.key) as client:
            self.client = client
            return await getattr(EngramSession, name)(self, *args)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items: list[Any] = await self._call("get_items", limit)
        return items

    async def add_items(self, items: list[Any]) -> None:
        await self._call("add_items", items)

    async def pop_item(self) -> Any:
        return await self._call("pop_item")

    async def clear_session(self) -> None:
        await self._call("clear_session")

    def close(self) -> None:
        """Nothing to close: each call closes its client."""
