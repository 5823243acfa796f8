"""Python client for Engram, the long-term memory service for AI agents.

from engram_client import EngramClient

with EngramClient("http://127.0.0.1:8000", api_key="...") as engram:
    engram.store_episode("Ann: I moved to Lyon", butler="chat")
    block = engram.context("Where does Ann live?", butler="chat")

The names below are imported when first used, so `engram_client.hooks` (which runs on every
prompt of a coding agent) starts without loading pydantic and the client's models.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram_client._http import EngramError, RetryPolicy
    from engram_client.client import AsyncEngramClient, EngramClient
    from engram_client.models import (
        ContextBlock,
        Episode,
        Fact,
        Job,
        RecallResult,
        Rule,
        SearchHit,
        SearchResult,
    )

_HOMES = {
    "AsyncEngramClient": "engram_client.client",
    "ContextBlock": "engram_client.models",
    "EngramClient": "engram_client.client",
    "EngramError": "engram_client._http",
    "Episode": "engram_client.models",
    "Fact": "engram_client.models",
    "Job": "engram_client.models",
    "RecallResult": "engram_client.models",
    "RetryPolicy": "engram_client._http",
    "Rule": "engram_client.models",
    "SearchHit": "engram_client.models",
    "SearchResult": "engram_client.models",
}

__all__ = [
    "AsyncEngramClient",
    "ContextBlock",
    "EngramClient",
    "EngramError",
    "Episode",
    "Fact",
    "Job",
    "RecallResult",
    "RetryPolicy",
    "Rule",
    "SearchHit",
    "SearchResult",
]


def __getattr__(name: str) -> Any:
    """The public name `name`, imported from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module 'engram_client' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
