"""conftest.py of a run of LangGraph's own store tests against a live Engram through
EngramStore (tests/clients/test_langgraph_peer_suite.py copies it next to the tests).

The tests' SQLite store fixtures are replaced by EngramStores, each on a tenant of its own
(ENGRAM_URL, and one API key a store from the JSON list in ENGRAM_PEER_KEYS); the SQLite
modules they import for annotations are stand-ins.
"""

import json
import os
import sys
import types
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from engram_client.langgraph import EngramStore

_KEYS = iter(json.loads(os.environ["ENGRAM_PEER_KEYS"]))
_URL = os.environ["ENGRAM_URL"]


def _stand_ins() -> None:
    sqlite = types.ModuleType("langgraph.store.sqlite")
    base = types.ModuleType("langgraph.store.sqlite.base")
    aio = types.ModuleType("langgraph.store.sqlite.aio")
    sqlite.SqliteStore = sqlite.AsyncSqliteStore = EngramStore  # type: ignore[attr-defined]
    aio.AsyncSqliteStore = EngramStore  # type: ignore[attr-defined]
    for name in (
        "NS_MATCH_FUNCTION",
        "BaseSqliteStore",
        "SqliteIndexConfig",
        "_escape_glob_literal",
        "_namespace_match_pattern",
    ):
        setattr(base, name, None)
    sqlite.base, sqlite.aio = base, aio  # type: ignore[attr-defined]
    sys.modules.update(
        {
            "langgraph.store.sqlite": sqlite,
            "langgraph.store.sqlite.base": base,
            "langgraph.store.sqlite.aio": aio,
        }
    )


_stand_ins()


def engram_store() -> EngramStore:
    """A store on a tenant no other store uses."""
    return EngramStore(_URL, api_key=next(_KEYS))


@pytest.fixture(params=["engram"])
def store() -> Iterator[EngramStore]:
    with engram_store() as made:
        yield made


@contextmanager
def create_vector_store(*_: Any, **__: Any) -> Iterator[EngramStore]:
    """Engram embeds with its own model: the tests' embedding configuration is not used."""
    with engram_store() as made:
        yield made


@asynccontextmanager
async def acreate_vector_store(*_: Any, **__: Any) -> AsyncIterator[EngramStore]:
    async with engram_store() as made:
        yield made
