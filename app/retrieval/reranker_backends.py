"""What scores documents against a query for the reranker an operator brings: a rerank endpoint
over HTTP (Cohere, Jina, vLLM, text-embeddings-inference) or a local sentence-transformers
CrossEncoder on a thread of its own."""

import asyncio
import json
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import httpx

from app.core.config import RerankerSettings
from app.core.outbound import endpoint, json_headers
from app.schemas.search import RerankerSkip

# What an endpoint may take beyond the search's time budget before httpx gives up on it (the
# budget itself, over the whole call, is kept by the caller).
HTTP_GRACE_SECONDS = 1.0
# The most an answer may hold, from the number of documents sent: each result's index and
# score, and the document's text should the endpoint echo it (Jina does unless told not to)
# at up to 6 bytes a character (a JSON escape), besides a little of its own. An endpoint that
# answers more has failed; reading and parsing it would cost the search far past its budget.
ANSWER_BASE_BYTES = 64 * 1024
ANSWER_RESULT_BYTES = 1024
ANSWER_BYTES_PER_CHAR = 6
# An answer of more bytes than this is parsed on a thread, so the event loop keeps serving.
PARSED_ON_LOOP_BYTES = 64 * 1024


class RerankerError(Exception):
    """The reranker gave no usable scores; `reason` is `timeout` or `error`. Its words name
    what failed (a status, an exception's type), never the key or the documents."""

    def __init__(self, message: str, *, reason: RerankerSkip = "error") -> None:
        super().__init__(message)
        self.reason = reason


class Scorer(Protocol):
    """Scores each document's relevance to a query (higher is more relevant)."""

    def load(self) -> None:
        """Get ready to score (read the model); called once at start-up."""

    async def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        """Each scored document's index and score."""

    async def aclose(self) -> None:
        """Give back what it holds (connections, threads)."""


class EndpointScorer:
    """POSTs `{base_url}/rerank` in the configured request shape; reads either answer shape."""

    def __init__(
        self, settings: RerankerSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        if not settings.base_url:
            raise ValueError("reranker base_url is not configured")
        self._settings = settings
        self._url = endpoint(settings.base_url, "/rerank")
        headers = json_headers(settings.api_key)
        timeout = httpx.Timeout(settings.timeout_ms / 1000 + HTTP_GRACE_SECONDS)
        self._http = httpx.AsyncClient(timeout=timeout, headers=headers, transport=transport)

    def load(self) -> None:
        """Nothing to read: the endpoint holds the model."""

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        """The request: Cohere's shape (Jina, vLLM, Infinity take it too) or TEI's."""
        if self._settings.api == "tei":
            return {"query": query, "texts": list(documents), "truncate": True}
        body: dict[str, Any] = {
            "query": query,
            "documents": list(documents),
            "top_n": len(documents),
        }
        if self._settings.model:
            body["model"] = self._settings.model
        return body

    async def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        """Each document's score as the endpoint gives it; a RerankerError when its answer is
        longer than `answer_cap` allows (read no further) or unreadable."""
        cap = answer_cap(len(documents), self._settings.document_chars)
        try:
            async with self._http.stream(
                "POST", self._url, json=self.body(query, documents)
            ) as response:
                if response.status_code >= 400:
                    raise RerankerError(f"the rerank endpoint answered HTTP {response.status_code}")
                body = await capped_body(response, cap)
        except httpx.TimeoutException:
            raise RerankerError("the rerank endpoint timed out", reason="timeout") from None
        except httpx.TransportError as exc:
            raise RerankerError(f"the rerank endpoint failed: {type(exc).__name__}") from None
        try:
            if len(body) > PARSED_ON_LOOP_BYTES:
                return await asyncio.to_thread(parsed_scores, body, len(documents))
            return parsed_scores(body, len(documents))
        except ValueError as exc:
            raise RerankerError(f"the rerank endpoint's answer is unreadable: {exc}") from None

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()


def answer_cap(count: int, document_chars: int) -> int:
    """The most bytes a rerank answer for `count` documents of up to `document_chars`
    characters may hold."""
    return ANSWER_BASE_BYTES + count * (
        ANSWER_RESULT_BYTES + ANSWER_BYTES_PER_CHAR * document_chars
    )


async def capped_body(response: httpx.Response, cap: int) -> bytes:
    """The body of a streamed response; a RerankerError as soon as it is known to hold more
    than `cap` bytes (its Content-Length, else what arrived), the rest never read."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise RerankerError(f"the rerank endpoint's answer is over {cap} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > cap:
            raise RerankerError(f"the rerank endpoint's answer is over {cap} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parsed_scores(body: bytes, count: int) -> dict[int, float]:
    """`answer_scores` of a JSON body; a ValueError when it is no JSON."""
    return answer_scores(json.loads(body), count)


def answer_scores(answer: Any, count: int) -> dict[int, float]:
    """Index -> score of a rerank answer: `{"results": [{index, relevance_score}]}` (Cohere,
    Jina; `data` for Voyage) or `[{index, score}]` (text-embeddings-inference)."""
    if isinstance(answer, dict):
        answer = answer.get("results", answer.get("data"))
    if not isinstance(answer, list):
        raise ValueError("no list of results")
    scores: dict[int, float] = {}
    for item in answer:
        if not isinstance(item, dict):
            raise ValueError("a result is not an object")
        index = item.get("index")
        score = item.get("relevance_score", item.get("score"))
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < count
            or not isinstance(score, int | float)
            or isinstance(score, bool)
            or not math.isfinite(score)
        ):
            raise ValueError("a result has no valid index and score")
        scores[index] = float(score)
    return scores


class CrossEncoderScorer:
    """A sentence-transformers CrossEncoder read from local files, run on one thread of its
    own so the event loop never waits for it."""

    def __init__(self, settings: RerankerSettings) -> None:
        if not settings.model_path:
            raise ValueError("reranker model_path is not configured")
        self._path = Path(settings.model_path).expanduser()
        self._device = settings.device
        self._model: Any = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-reranker")

    def load(self) -> None:
        """Read the model from its directory; a ValueError when it is no single-score
        cross-encoder there."""
        if not self._path.is_dir():
            raise ValueError(f"reranker model_path {str(self._path)!r} is not a directory")
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(self._path), device=self._device, local_files_only=True)
        if model.config.num_labels != 1:
            raise ValueError(
                f"the cross-encoder at {str(self._path)!r} gives "
                f"{model.config.num_labels} scores a pair, not one"
            )
        self._model = model

    async def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        """Each document's score, computed on the model's thread."""
        if self._model is None:
            raise RerankerError("the cross-encoder is not loaded")
        loop = asyncio.get_running_loop()
        values = await loop.run_in_executor(self._thread, self._predict, query, list(documents))
        return dict(enumerate(values))

    def _predict(self, query: str, documents: list[str]) -> list[float]:
        scores = self._model.predict(
            [(query, document) for document in documents],
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return [float(score) for score in scores]

    async def aclose(self) -> None:
        """Let the thread end once a pair in progress is scored."""
        self._thread.shutdown(wait=False, cancel_futures=True)
