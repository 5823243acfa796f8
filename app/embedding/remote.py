"""A backend that asks an OpenAI-compatible `POST {base_url}/embeddings` endpoint.

OpenAI, Azure OpenAI, Ollama, Text Embeddings Inference, vLLM and LiteLLM answer
`{"model", "input": [...]}` with `data[i].embedding` and `data[i].index`. Calls are blocking:
they run on the fair scheduler's model threads, like a local model's, so tenants take turns
for the remote server too and the event loop never waits on it.
"""

import email.utils
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import httpx
import numpy as np

from app.clock import now_utc
from app.errors import Unavailable
from app.outbound import endpoint as endpoint_url
from app.outbound import json_headers

logger = logging.getLogger(__name__)

# 429 and 503 say "later"; the other statuses here are a proxy's or a restart's.
RETRYABLE_STATUSES = {408, 429, 500, 502, 503, 504}
MAX_ERROR_BODY = 300
# Seconds a caller is told to wait when the endpoint named no time of its own.
DEFAULT_RETRY_AFTER = 5
# Tokens a remote model reads of one text: only the scheduler's size estimate uses it.
REMOTE_MAX_SEQ_LENGTH = 8192


class RemoteEmbeddingError(Unavailable, status_code=503, title="Embedding model unavailable"):
    """The embeddings endpoint gave no usable answer (after every retry).

    A request that needed the model answers 503 with `Retry-After` and a detail that names
    no endpoint; `str()` is the whole diagnosis, for the logs and the operator.
    """

    def __init__(self, diagnosis: str, *, retry_after: float | None = None) -> None:
        super().__init__("The embedding model is unavailable; retry later.",
                         retry_after=max(1, math.ceil(retry_after or DEFAULT_RETRY_AFTER)))
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return self.diagnosis


@dataclass(frozen=True)
class RemoteEndpoint:
    """Where and how to ask for embeddings; `api_key` is a secret, kept out of every repr."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    batch_size: int = 64
    timeout_seconds: float = 30.0
    max_attempts: int = 5
    backoff_seconds: float = 0.5
    max_wait_seconds: float = 30.0


# After a call failed every attempt, writes and searches do not wait on the endpoint for this
# long (unless it answers meanwhile); the first caller after it tries again.
FAILED_RECENTLY_SECONDS = 10.0


class RemoteBackend:
    """Texts to normalised vectors through an OpenAI-compatible embeddings endpoint."""

    max_seq_length = REMOTE_MAX_SEQ_LENGTH

    def __init__(self, endpoint: RemoteEndpoint, *, model: str, dimensions: int | None = None,
                 recorded_dimensions: int | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._url = endpoint_url(endpoint.base_url, "/embeddings")
        self._model = model
        self._endpoint = endpoint
        self._sleep = sleep
        headers = json_headers(endpoint.api_key or None)
        self._http = httpx.Client(timeout=httpx.Timeout(endpoint.timeout_seconds),
                                  headers=headers)
        # time.monotonic() of the endpoint's last good answer and of its last call that
        # failed every attempt; 0.0 before the first.
        self.answered_at = 0.0
        self.failed_at = 0.0
        self.dimensions = dimensions or self._asked_dimensions(recorded_dimensions)

    @property
    def failed_recently(self) -> bool:
        """Whether the last call failed every attempt, fewer than FAILED_RECENTLY_SECONDS ago."""
        return (self.failed_at > self.answered_at
                and time.monotonic() - self.failed_at < FAILED_RECENTLY_SECONDS)

    def _asked_dimensions(self, recorded: int | None) -> int:
        """The length of the model's vectors, asked of it with one call of one text; when it
        does not answer, the length recorded for it by an earlier start, if any."""
        try:
            return int(self._call(["dimensions"]).shape[1])
        except RemoteEmbeddingError:
            if recorded is None:
                raise
            logger.warning("embeddings endpoint %s did not answer; taking the %d dimensions "
                           "recorded for model %r", self._url, recorded, self._model)
            return recorded

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors of shape (len(texts), dimensions), `batch_size` texts a request."""
        parts = [self._call(texts[start:start + self._endpoint.batch_size])
                 for start in range(0, len(texts), self._endpoint.batch_size)]
        vectors = np.concatenate(parts) if parts else np.empty((0, self.dimensions), np.float32)
        if vectors.shape[1] != self.dimensions:
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered {vectors.shape[1]}-d vectors for "
                f"model {self._model!r}, {self.dimensions}-d expected")
        return vectors

    def _call(self, texts: list[str]) -> np.ndarray:
        """One request, retried on timeouts, connection errors, 429 and 5xx."""
        last_error = "no attempt made"
        asked: float | None = None  # the last Retry-After the endpoint sent
        for attempt in range(1, self._endpoint.max_attempts + 1):
            wait = self._endpoint.backoff_seconds * 2 ** (attempt - 1)
            try:
                response = self._http.post(self._url, json={"model": self._model,
                                                             "input": texts})
            except httpx.TimeoutException:
                last_error = "timed out"
            except httpx.TransportError as exc:
                last_error = f"connection failed: {type(exc).__name__}: {exc}"
            else:
                if response.status_code < 400:
                    vectors = self._vectors(response, len(texts))
                    self.answered_at = time.monotonic()
                    return vectors
                last_error = f"HTTP {response.status_code}: {response.text[:MAX_ERROR_BODY]}"
                if response.status_code not in RETRYABLE_STATUSES:
                    break
                asked = retry_after(response.headers.get("retry-after"))
                wait = asked if asked is not None else wait
            if attempt < self._endpoint.max_attempts:
                wait = min(wait, self._endpoint.max_wait_seconds)
                logger.warning("embeddings request attempt %d/%d to %s failed: %s; retrying "
                               "in %.1fs", attempt, self._endpoint.max_attempts, self._url,
                               last_error, wait)
                self._sleep(wait)
        diagnosis = (f"embeddings request to {self._url} (model {self._model!r}) failed after "
                     f"{attempt} attempt(s): {last_error}")
        logger.error("%s", diagnosis)
        self.failed_at = time.monotonic()
        raise RemoteEmbeddingError(diagnosis, retry_after=asked)

    def _vectors(self, response: httpx.Response, count: int) -> np.ndarray:
        """The answer's vectors in input order, L2-normalised."""
        try:
            payload: Any = response.json()
            rows = sorted(payload["data"], key=lambda row: int(row["index"]))
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered something other than an "
                f"embeddings list: {response.text[:MAX_ERROR_BODY]}") from exc
        if vectors.ndim != 2 or len(vectors) != count:
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered {len(vectors)} vectors for "
                f"{count} texts")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        normalised: np.ndarray = vectors / np.maximum(norms, 1e-12)
        return normalised


def retry_after(value: str | None) -> float | None:
    """Seconds a `Retry-After` header asks for (delta-seconds or an HTTP date), else None."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - now_utc()).total_seconds(), 0.0)
