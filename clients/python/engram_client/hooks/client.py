"""The few HTTP calls a hook makes to a running Engram, each bounded by its deadline, and
the one-line reports a hook leaves on stderr."""

import sys
from typing import Any

import httpx

from engram_client.hooks.config import Deadline, HookConfig


class Engram:
    """The few calls a hook makes, each bounded by what is left of the deadline."""

    def __init__(self, config: HookConfig, deadline: Deadline) -> None:
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self.http = httpx.Client(base_url=config.url, headers=headers, timeout=config.timeout)
        self.deadline = deadline

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of one request; an HTTPError for a failure or a 4xx/5xx."""
        response = self.http.request(method, path, timeout=self.deadline.left(), **kwargs)
        response.raise_for_status()
        return response.json()

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()


def describe(error: BaseException) -> str:
    """One line saying what failed."""
    if isinstance(error, httpx.HTTPStatusError):
        return (
            f"Engram answered {error.response.status_code} to "
            f"{error.request.method} {error.request.url.path}: {error.response.text[:300]}"
        )
    return f"{type(error).__name__}: {error}"


def log(message: str) -> None:
    """A line on stderr, where Claude Code's debug log (not the model) reads it."""
    sys.stderr.write(f"engram hook: {message}\n")
