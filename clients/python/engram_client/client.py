"""`EngramClient` (sync) and `AsyncEngramClient` (async): the same methods, the same retries."""

import asyncio
import json
import logging
import threading
import time
from typing import Any, TypeVar

import httpx

from engram_client._http import (
    RETRY_ERRORS,
    EngramError,
    RetryPolicy,
    body_of,
    headers,
    name_request,
    request_url,
    without_none,
)
from engram_client.models import (
    ContextBlock,
    Episode,
    Fact,
    Job,
    Model,
    RecallResult,
    Rule,
    SearchResult,
)

logger = logging.getLogger("engram_client")
ModelT = TypeVar("ModelT", bound=Model)
DEFAULT_TIMEOUT = 30.0
# Requests one client has in flight at once; the rest wait their turn in the client.
DEFAULT_MAX_IN_FLIGHT = 10
# Items one bulk read or delete carries, and one bulk store (the server's limits).
MAX_BULK_ITEMS = 1000
STORE_CHUNK = 100


def _chunks(items: list[Any], size: int = MAX_BULK_ITEMS) -> list[list[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _limits(max_in_flight: int) -> httpx.Limits:
    if max_in_flight < 1:
        raise ValueError("max_in_flight must be at least 1")
    return httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)


def _episode(
    content: str,
    butler: str,
    session_id: str | None,
    occurred_at: str | None,
    importance: float | None,
    metadata: dict[str, Any] | None,
) -> dict[str, Any]:
    return without_none(
        {
            "content": content,
            "butler": butler,
            "session_id": session_id,
            "occurred_at": occurred_at,
            "importance": importance,
            "metadata": metadata,
        }
    )


# The lists `list_page` reads, each filtered by its own fields (docs/search.md#filters).
LISTS = ("episodes", "facts", "rules", "entities", "runs", "procedures", "arcs", "links")


def _list_params(
    kind: str, filter: dict[str, Any] | None, limit: int, cursor: str | None, params: dict[str, Any]
) -> dict[str, Any]:
    """The query of one page of a list; the filter object goes as JSON text."""
    if kind not in LISTS:
        raise ValueError(f"unknown list {kind!r}; one of {', '.join(LISTS)}")
    return without_none(
        {
            **params,
            "limit": limit,
            "cursor": cursor,
            "filter": None if filter is None else json.dumps(filter),
        }
    )


def _empty_context(error: Exception) -> ContextBlock:
    warning = f"Engram unavailable, empty memory context: {error}"
    logger.warning(warning)
    return ContextBlock(context="", warning=warning)


class EngramClient:
    """A blocking client. `with EngramClient(url, api_key=...) as engram: engram.search(...)`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=base_url,
            headers=headers(api_key),
            timeout=timeout,
            transport=transport,
            limits=_limits(max_in_flight),
        )
        self._slots = threading.BoundedSemaphore(max_in_flight)

    @property
    def base_url(self) -> str:
        """The URL of the Engram this client talks to."""
        return str(self._http.base_url).rstrip("/")

    def __enter__(self) -> "EngramClient":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call with retries; the JSON answer, or EngramError."""
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                with self._slots:
                    response = self._http.request(method, path, **kwargs)
            except RETRY_ERRORS as error:
                if not self.retry.should_retry(attempt, None):
                    name_request(error, method, request_url(self._http, path))
                    raise
            else:
                if not self.retry.should_retry(attempt, response):
                    return body_of(response)
            time.sleep(self.retry.delay(attempt, response))
            attempt += 1

    def _model(self, model: type[ModelT], method: str, path: str, **kwargs: Any) -> ModelT:
        return model.model_validate(self.request(method, path, **kwargs))

    def store_episode(
        self,
        content: str,
        *,
        butler: str,
        session_id: str | None = None,
        occurred_at: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Episode:
        """Store one observation."""
        return self._model(
            Episode,
            "POST",
            "/v1/episodes",
            json=_episode(content, butler, session_id, occurred_at, importance, metadata),
        )

    def store_episodes(self, items: list[dict[str, Any]]) -> list[Episode]:
        """Store many observations in one transaction (each item as for `store_episode`)."""
        body = self.request("POST", "/v1/episodes/batch", json={"items": items})
        return [Episode.model_validate(item) for item in body["items"]]

    def store_fact(self, subject: str, predicate: str, content: str, **fields: Any) -> Fact:
        """Store a fact (a newer one with the same key supersedes the old one)."""
        return self._model(
            Fact,
            "POST",
            "/v1/facts",
            json=without_none(
                {"subject": subject, "predicate": predicate, "content": content, **fields}
            ),
        )

    def store_facts(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store facts in order (each as for `store_fact`), 100 a request, each request one
        transaction (all or none: a refused item raises EngramError naming it, and the
        requests before it stay stored). One result per item:
        `{"status": 201 | 200, "fact": {...}}`."""
        return self._bulk("/v1/facts/bulk", items, STORE_CHUNK)

    def get_facts(self, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Read facts by `{"id": ...}` or key `{"scope", "subject", "predicate"}`, 1000 a
        request. One result per ref: `{"status": 200, "fact": {...}}` or `{"status": 404}`."""
        return self._bulk("/v1/facts/bulk/get", refs)

    def delete_facts(self, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Delete facts (each with its history) by id or key, 1000 a request. One result per
        ref: `{"status": 204, "deleted_ids": [...]}` or `{"status": 404}`."""
        return self._bulk("/v1/facts/bulk/delete", refs)

    def _bulk(
        self, path: str, items: list[dict[str, Any]], size: int = MAX_BULK_ITEMS
    ) -> list[dict[str, Any]]:
        """Each item's result, from one POST of `path` per `size` items, in order."""
        return [
            result
            for chunk in _chunks(items, size)
            for result in self.request("POST", path, json={"items": chunk})["items"]
        ]

    def store_rule(self, content: str, **fields: Any) -> Rule:
        """Store a candidate rule."""
        return self._model(
            Rule, "POST", "/v1/rules", json=without_none({"content": content, **fields})
        )

    def search(self, query: str, **fields: Any) -> SearchResult:
        """Hybrid (or `mode=`) search; any field of POST /v1/search may be given, e.g.
        `filter={"metadata.topic": "travel"}`."""
        return self._model(
            SearchResult, "POST", "/v1/search", json=without_none({"query": query, **fields})
        )

    def recall(self, topic: str, **fields: Any) -> RecallResult:
        """Facts and rules about a topic, by composite score."""
        return self._model(
            RecallResult, "POST", "/v1/recall", json=without_none({"topic": topic, **fields})
        )

    def context(
        self,
        trigger_prompt: str,
        *,
        butler: str,
        token_budget: int | None = None,
        fail_open: bool = True,
        filter: dict[str, Any] | None = None,
    ) -> ContextBlock:
        """The memory block for a prompt, of the memories `filter` admits (all by default).
        With `fail_open` (the default) an unreachable or failing service gives an empty
        block with a `warning`, so the agent keeps running."""
        body = without_none(
            {
                "trigger_prompt": trigger_prompt,
                "butler": butler,
                "token_budget": token_budget,
                "filter": filter,
            }
        )
        try:
            return self._model(ContextBlock, "POST", "/v1/context", json=body)
        except Exception as error:
            if not fail_open or not _is_outage(error):
                raise
            return _empty_context(error)

    def list_page(
        self,
        kind: str,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 50,
        cursor: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """One page (`items`, `next_cursor`) of a list: `kind` is episodes, facts, rules,
        entities, runs, procedures, arcs or links; `filter` keeps what it admits, e.g.
        `list_page("runs", filter={"metadata.model": "small"}, task_id="triage")`."""
        page: dict[str, Any] = self.request(
            "GET", f"/v1/{kind}", params=_list_params(kind, filter, limit, cursor, params)
        )
        return page

    def list_all(
        self,
        kind: str,
        *,
        filter: dict[str, Any] | None = None,
        page_size: int = 200,
        **params: Any,
    ) -> list[dict[str, Any]]:
        """Every item of a list, read page by page (`list_page`'s kinds and filters)."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = self.list_page(kind, filter=filter, limit=page_size, cursor=cursor, **params)
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def stats(self, scope: str | None = None) -> dict[str, Any]:
        """Counts by lifecycle state."""
        stats: dict[str, Any] = self.request(
            "GET", "/v1/stats", params=without_none({"scope": scope})
        )
        return stats

    def start_job(self, kind: str, **params: Any) -> Job:
        """Queue a background job (consolidation, decay, cleanup, ...)."""
        return self._model(Job, "POST", f"/v1/jobs/{kind}", json=params or None)

    def job(self, job_id: str) -> Job:
        """A job's state and result."""
        return self._model(Job, "GET", f"/v1/jobs/{job_id}")


class AsyncEngramClient:
    """The async twin of `EngramClient`: `async with AsyncEngramClient(url) as engram: ...`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers(api_key),
            timeout=timeout,
            transport=transport,
            limits=_limits(max_in_flight),
        )
        self.max_in_flight = max_in_flight
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    @property
    def base_url(self) -> str:
        """The URL of the Engram this client talks to."""
        return str(self._http.base_url).rstrip("/")

    async def __aenter__(self) -> "AsyncEngramClient":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API call with retries; the JSON answer, or EngramError."""
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                async with self._semaphore():
                    response = await self._http.request(method, path, **kwargs)
            except RETRY_ERRORS as error:
                if not self.retry.should_retry(attempt, None):
                    name_request(error, method, request_url(self._http, path))
                    raise
            else:
                if not self.retry.should_retry(attempt, response):
                    return body_of(response)
            await asyncio.sleep(self.retry.delay(attempt, response))
            attempt += 1

    def _semaphore(self) -> asyncio.Semaphore:
        """The running loop's bound on requests in flight (a semaphore serves one loop)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self.max_in_flight))
        return self._slots[1]

    async def _model(self, model: type[ModelT], method: str, path: str, **kwargs: Any) -> ModelT:
        return model.model_validate(await self.request(method, path, **kwargs))

    async def store_episode(
        self,
        content: str,
        *,
        butler: str,
        session_id: str | None = None,
        occurred_at: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Episode:
        """Store one observation."""
        return await self._model(
            Episode,
            "POST",
            "/v1/episodes",
            json=_episode(content, butler, session_id, occurred_at, importance, metadata),
        )

    async def store_episodes(self, items: list[dict[str, Any]]) -> list[Episode]:
        """Store many observations in one transaction."""
        body = await self.request("POST", "/v1/episodes/batch", json={"items": items})
        return [Episode.model_validate(item) for item in body["items"]]

    async def store_fact(self, subject: str, predicate: str, content: str, **fields: Any) -> Fact:
        """Store a fact (a newer one with the same key supersedes the old one)."""
        return await self._model(
            Fact,
            "POST",
            "/v1/facts",
            json=without_none(
                {"subject": subject, "predicate": predicate, "content": content, **fields}
            ),
        )

    async def store_facts(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store facts in order, 100 a request (see `EngramClient.store_facts`)."""
        return await self._bulk("/v1/facts/bulk", items, STORE_CHUNK)

    async def get_facts(self, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Read facts by id or key, 1000 a request (see `EngramClient.get_facts`)."""
        return await self._bulk("/v1/facts/bulk/get", refs)

    async def delete_facts(self, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Delete facts by id or key, 1000 a request (see `EngramClient.delete_facts`)."""
        return await self._bulk("/v1/facts/bulk/delete", refs)

    async def _bulk(
        self, path: str, items: list[dict[str, Any]], size: int = MAX_BULK_ITEMS
    ) -> list[dict[str, Any]]:
        """Each item's result, from one POST of `path` per `size` items, in order."""
        results: list[dict[str, Any]] = []
        for chunk in _chunks(items, size):
            results += (await self.request("POST", path, json={"items": chunk}))["items"]
        return results

    async def store_rule(self, content: str, **fields: Any) -> Rule:
        """Store a candidate rule."""
        return await self._model(
            Rule, "POST", "/v1/rules", json=without_none({"content": content, **fields})
        )

    async def search(self, query: str, **fields: Any) -> SearchResult:
        """Hybrid (or `mode=`) search; any field of POST /v1/search may be given."""
        return await self._model(
            SearchResult, "POST", "/v1/search", json=without_none({"query": query, **fields})
        )

    async def recall(self, topic: str, **fields: Any) -> RecallResult:
        """Facts and rules about a topic, by composite score."""
        return await self._model(
            RecallResult, "POST", "/v1/recall", json=without_none({"topic": topic, **fields})
        )

    async def context(
        self,
        trigger_prompt: str,
        *,
        butler: str,
        token_budget: int | None = None,
        fail_open: bool = True,
        filter: dict[str, Any] | None = None,
    ) -> ContextBlock:
        """The memory block for a prompt; filtered and fail-open like
        `EngramClient.context`."""
        body = without_none(
            {
                "trigger_prompt": trigger_prompt,
                "butler": butler,
                "token_budget": token_budget,
                "filter": filter,
            }
        )
        try:
            return await self._model(ContextBlock, "POST", "/v1/context", json=body)
        except Exception as error:
            if not fail_open or not _is_outage(error):
                raise
            return _empty_context(error)

    async def list_page(
        self,
        kind: str,
        *,
        filter: dict[str, Any] | None = None,
        limit: int = 50,
        cursor: str | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """One page of a list, filtered like `EngramClient.list_page`."""
        page: dict[str, Any] = await self.request(
            "GET", f"/v1/{kind}", params=_list_params(kind, filter, limit, cursor, params)
        )
        return page

    async def list_all(
        self,
        kind: str,
        *,
        filter: dict[str, Any] | None = None,
        page_size: int = 200,
        **params: Any,
    ) -> list[dict[str, Any]]:
        """Every item of a list, read page by page, like `EngramClient.list_all`."""
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await self.list_page(
                kind, filter=filter, limit=page_size, cursor=cursor, **params
            )
            items += page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    async def stats(self, scope: str | None = None) -> dict[str, Any]:
        """Counts by lifecycle state."""
        stats: dict[str, Any] = await self.request(
            "GET", "/v1/stats", params=without_none({"scope": scope})
        )
        return stats

    async def start_job(self, kind: str, **params: Any) -> Job:
        """Queue a background job."""
        return await self._model(Job, "POST", f"/v1/jobs/{kind}", json=params or None)

    async def job(self, job_id: str) -> Job:
        """A job's state and result."""
        return await self._model(Job, "GET", f"/v1/jobs/{job_id}")


def _is_outage(error: Exception) -> bool:
    """A failure of the service rather than of the request: no connection, a timeout, 5xx."""
    if isinstance(error, EngramError):
        return error.status >= 500
    return isinstance(error, httpx.TransportError)
