"""Python client for Engram, the long-term memory service for AI agents.

from engram_client import EngramClient

with EngramClient("http://127.0.0.1:8000", api_key="...") as engram:
    engram.store_episode("Ann: I moved to Lyon", butler="chat")
    block = engram.context("Where does Ann live?", butler="chat")
"""

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
