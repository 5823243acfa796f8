"""What the sync and async clients share: requests, retry decisions, errors."""

import random
from dataclasses import dataclass
from typing import Any

import httpx

RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_ERRORS = (httpx.TransportError,)


class EngramError(Exception):
    """A problem answer from Engram (4xx/5xx after retries): status and problem body."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        fields = ", ".join(e.get("field", "?") for e in problem.get("errors", []) or [])
        detail = problem.get("detail") or problem.get("title") or "error"
        super().__init__(f"{status}: {detail}" + (f" ({fields})" if fields else ""))


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429/502/503/504 and connection errors, with exponential backoff and jitter;
    a `Retry-After` header is obeyed (up to `max_delay`)."""

    retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0

    def delay(self, attempt: int, response: httpx.Response | None) -> float:
        """Seconds to wait before attempt `attempt + 1` (attempt counts from 0)."""
        if response is not None and (after := response.headers.get("Retry-After")):
            try:
                return min(self.max_delay, max(0.0, float(after)))
            except ValueError:
                pass
        backoff = min(self.max_delay, self.base_delay * 2**attempt)
        return backoff * (0.5 + random.random() / 2)

    def should_retry(self, attempt: int, response: httpx.Response | None) -> bool:
        """Whether the answer (None: a connection error) is worth another attempt."""
        if attempt >= self.retries:
            return False
        return response is None or response.status_code in RETRY_STATUSES


def name_request(error: httpx.TransportError, method: str, url: str) -> None:
    """Put the request's method and URL at the head of a transport error's message."""
    said = str(error)
    if url not in said:
        error.args = (f"{method} {url}: {said}" if said else f"{method} {url}", *error.args[1:])


def request_url(http: httpx.Client | httpx.AsyncClient, path: str) -> str:
    """The URL a request of `path` goes to (without its query)."""
    return str(http.base_url).rstrip("/") + "/" + path.lstrip("/")


def headers(api_key: str | None) -> dict[str, str]:
    """The headers every request sends."""
    sent = {"User-Agent": "engram-client"}
    if api_key:
        sent["Authorization"] = f"Bearer {api_key}"
    return sent


def body_of(response: httpx.Response) -> Any:
    """The JSON answer, or EngramError for a problem."""
    if response.status_code >= 400:
        try:
            problem = response.json()
        except ValueError:
            problem = {"detail": response.text[:500]}
        raise EngramError(response.status_code, problem if isinstance(problem, dict) else {})
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def without_none(values: dict[str, Any]) -> dict[str, Any]:
    """The request fields that were given (None means: the server's default)."""
    return {key: value for key, value in values.items() if value is not None}
