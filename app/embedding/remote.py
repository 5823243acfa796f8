"""A backend that asks an OpenAI-compatible `POST {base_url}/embeddings` endpoint.

OpenAI, Azure OpenAI, Ollama, Text Embeddings Inference, vLLM and LiteLLM answer
`{"model", "input": [...]}` with `data[i].embedding` and `data[i].index`. Calls are blocking:
they run on the fair scheduler's model threads, like a local model's, so tenants take turns
for the remote server too and the event loop never waits on it.
"""

import email.utils
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import httpx
import numpy as np

from app.core.clock import now_utc
from app.core.errors import Unavailable
from app.core.outbound import endpoint as endpoint_url
from app.core.outbound import json_headers

logger = logging.getLogger(__name__)

# 429 and 503 say "later"; the other statuses here are a proxy's or a restart's.
RETRYABLE_STATUSES = {408, 429, 500, 502, 503, 504}
# Statuses that refuse the texts sent (too long, malformed), not the caller: the same texts
# will never succeed, other texts will. Other 4xx (a wrong key, a wrong URL) refuse everyone.
TEXT_REFUSALS = {400, 413, 422}
MAX_ERROR_BODY = 300
# The most an answer may weigh: this many bytes a number of each vector (a float in JSON
# with its separator is under 25), plus some for the envelope and each entry's fields. An
# answer past it is cut off, never parsed.
ANSWER_BYTES_PER_NUMBER = 32
ANSWER_BYTES_PER_TEXT = 1024
ANSWER_ENVELOPE_BYTES = 64 * 1024
# Before the model's width is known (its first call), the widest a vector is taken to be.
WIDEST_DIMENSIONS = 16_384
ERROR_BODY_BYTES = 16 * 1024
# Seconds a caller is told to wait when the endpoint named no time of its own.
DEFAULT_RETRY_AFTER = 5
# Tokens a remote model reads of one text: only the scheduler's size estimate uses it.
REMOTE_MAX_SEQ_LENGTH = 8192


class RemoteEmbeddingError(Unavailable, status_code=503, title="Embedding model unavailable"):
    """The embeddings endpoint gave no usable answer (after every retry).

    A request that needed the model answers 503 with `Retry-After` and a detail that names
    no endpoint; `str()` is the whole diagnosis, for the logs and the operator. `kind` says
    whose failure it is: "outage" (the endpoint is down, slow, or refuses every caller),
    "refused" (it refused these texts: 400, 413, 422) or "invalid" (its answer was unusable:
    malformed, too large, indexes repeated or missing, a vector not finite or all zeros).
    Only an outage says anything about the next caller's texts.
    """

    def __init__(
        self, diagnosis: str, *, retry_after: float | None = None, kind: str = "outage"
    ) -> None:
        super().__init__(
            "The embedding model is unavailable; retry later.",
            retry_after=max(1, math.ceil(retry_after or DEFAULT_RETRY_AFTER)),
        )
        self.diagnosis = diagnosis
        self.kind = kind

    @property
    def outage(self) -> bool:
        """Whether the endpoint failed whatever the texts (not these texts' own failure)."""
        return self.kind == "outage"

    def __str__(self) -> str:
        return self.diagnosis


@dataclass(frozen=True)
class RemoteEndpoint:
    """Where and how to ask for embeddings; `api_key` is a secret, kept out of every repr."""

    base_url: str
    api_key: str | None = field(default=None, repr=False)
    batch_size: int = 64
    # The whole of one request, its answer's last byte included.
    timeout_seconds: float = 30.0
    max_attempts: int = 5
    backoff_seconds: float = 0.5
    max_wait_seconds: float = 30.0


# After a live call (a write's or a search's, not the backlog's) failed every attempt because
# the endpoint was down, writes and searches do not wait on it for this long (unless it
# answers meanwhile); the first caller after it tries again.
FAILED_RECENTLY_SECONDS = 10.0


class RemoteBackend:
    """Texts to normalised vectors through an OpenAI-compatible embeddings endpoint."""

    max_seq_length = REMOTE_MAX_SEQ_LENGTH

    def __init__(
        self,
        endpoint: RemoteEndpoint,
        *,
        model: str,
        dimensions: int | None = None,
        recorded_dimensions: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._url = endpoint_url(endpoint.base_url, "/embeddings")
        self._model = model
        self._endpoint = endpoint
        self._sleep = sleep
        headers = json_headers(endpoint.api_key or None)
        self._http = httpx.Client(timeout=httpx.Timeout(endpoint.timeout_seconds), headers=headers)
        # time.monotonic() of the endpoint's last good answer and of its last call that
        # failed every attempt; 0.0 before the first.
        self.answered_at = 0.0
        self.failed_at = 0.0
        self.dimensions = dimensions or self._asked_dimensions(recorded_dimensions)

    @property
    def failed_recently(self) -> bool:
        """Whether the last call failed every attempt, fewer than FAILED_RECENTLY_SECONDS ago."""
        return (
            self.failed_at > self.answered_at
            and time.monotonic() - self.failed_at < FAILED_RECENTLY_SECONDS
        )

    def mark_failed(self) -> None:
        """Note that the endpoint is down: live callers go on without it for a few seconds."""
        self.failed_at = time.monotonic()

    def _asked_dimensions(self, recorded: int | None) -> int:
        """The length of the model's vectors, asked of it with one call of one text; when it
        does not answer, the length recorded for it by an earlier start, if any."""
        try:
            return int(self._call(["dimensions"]).shape[1])
        except RemoteEmbeddingError:
            self.mark_failed()
            if recorded is None:
                raise
            logger.warning(
                "embeddings endpoint %s did not answer; taking the %d dimensions "
                "recorded for model %r",
                self._url,
                recorded,
                self._model,
            )
            return recorded

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def encode(self, texts: list[str], *, live: bool = True) -> np.ndarray:
        """Vectors of shape (len(texts), dimensions), `batch_size` texts a request. An outage
        met by a `live` call (not background work) marks the endpoint failed, from its first
        failed attempt on."""
        parts = [
            self._call(texts[start : start + self._endpoint.batch_size], live=live)
            for start in range(0, len(texts), self._endpoint.batch_size)
        ]
        vectors = np.concatenate(parts) if parts else np.empty((0, self.dimensions), np.float32)
        if vectors.shape[1] != self.dimensions:
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered {vectors.shape[1]}-d vectors for "
                f"model {self._model!r}, {self.dimensions}-d expected",
                kind="invalid",
            )
        return vectors

    def _call(self, texts: list[str], *, live: bool = False) -> np.ndarray:
        """One request, retried on timeouts, connection errors, 429 and 5xx. A `live` call
        marks the endpoint failed as soon as an attempt meets an outage, so other live
        callers skip it while this one retries (a good answer from any call clears it)."""
        last_error, kind = "no attempt made", "outage"
        asked: float | None = None  # the last Retry-After the endpoint sent
        for attempt in range(1, self._endpoint.max_attempts + 1):
            wait = self._endpoint.backoff_seconds * 2 ** (attempt - 1)
            try:
                status, headers, body = self._post(texts)
            except httpx.TimeoutException:
                last_error = "timed out"
            except httpx.TransportError as exc:
                last_error = f"connection failed: {type(exc).__name__}: {exc}"
            else:
                if status < 400:
                    vectors = self._vectors(body, len(texts))
                    self.answered_at = time.monotonic()
                    return vectors
                text = body[:MAX_ERROR_BODY].decode(errors="replace")
                last_error = f"HTTP {status}: {text}"
                if status in TEXT_REFUSALS:
                    kind = "refused"
                    break
                if status not in RETRYABLE_STATUSES:
                    if live:
                        self.mark_failed()
                    break
                asked = retry_after(headers.get("retry-after"))
                wait = asked if asked is not None else wait
            if live:
                self.mark_failed()
            if attempt < self._endpoint.max_attempts:
                wait = min(wait, self._endpoint.max_wait_seconds)
                logger.warning(
                    "embeddings request attempt %d/%d to %s failed: %s; retrying in %.1fs",
                    attempt,
                    self._endpoint.max_attempts,
                    self._url,
                    last_error,
                    wait,
                )
                self._sleep(wait)
        diagnosis = (
            f"embeddings request to {self._url} (model {self._model!r}) failed after "
            f"{attempt} attempt(s): {last_error}"
        )
        logger.error("%s", diagnosis)
        raise RemoteEmbeddingError(diagnosis, retry_after=asked, kind=kind)

    def _post(self, texts: list[str]) -> tuple[int, httpx.Headers, bytes]:
        """One POST: its status, headers and body, read within `timeout_seconds` in all (a
        body dripping in slowly included) and no larger than an answer for `texts` can be;
        an answer past either bound is dropped unread."""
        seconds = self._endpoint.timeout_seconds
        deadline = time.monotonic() + seconds
        with self._http.stream(
            "POST",
            self._url,
            json={"model": self._model, "input": texts},
            timeout=httpx.Timeout(seconds),
        ) as response:
            limit = (
                self.answer_limit(len(texts)) if response.status_code < 400 else ERROR_BODY_BYTES
            )
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > limit:
                    if response.status_code >= 400:
                        break
                    raise RemoteEmbeddingError(
                        f"embeddings endpoint {self._url} answered more than {limit} bytes "
                        f"for {len(texts)} texts",
                        kind="invalid",
                    )
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"answer not read within {seconds:g}s")
            return response.status_code, response.headers, bytes(body)

    def answer_limit(self, count: int) -> int:
        """The most bytes an answer of `count` vectors may take."""
        width = getattr(self, "dimensions", None) or WIDEST_DIMENSIONS
        return ANSWER_ENVELOPE_BYTES + count * (
            ANSWER_BYTES_PER_TEXT + width * ANSWER_BYTES_PER_NUMBER
        )

    def _vectors(self, body: bytes, count: int) -> np.ndarray:
        """The answer's vectors in input order, L2-normalised; an answer that does not give
        each text exactly one finite, non-zero vector is the endpoint's failure."""
        try:
            payload: Any = json.loads(body)
            rows = sorted(payload["data"], key=lambda row: int(row["index"]))
            indexes = [int(row["index"]) for row in rows]
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered something other than an "
                f"embeddings list: {body[:MAX_ERROR_BODY].decode(errors='replace')}",
                kind="invalid",
            ) from exc
        if vectors.ndim != 2 or indexes != list(range(count)):
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered {len(vectors)} vectors with "
                f"indexes {indexes[:10]} for {count} texts",
                kind="invalid",
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.isfinite(vectors).all() or not (norms > 0).all():
            raise RemoteEmbeddingError(
                f"embeddings endpoint {self._url} answered a vector that is not finite or "
                f"is all zeros",
                kind="invalid",
            )
        normalised: np.ndarray = vectors / norms
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
