"""`EngramStore`: LangGraph's long-term memory store (`BaseStore`) kept in Engram.

Install with `pip install 'engram[langgraph]'`, then
`graph.compile(store=EngramStore("http://127.0.0.1:8000", api_key="egk_..."))`.

How each BaseStore feature maps onto Engram:

- **item** (namespace, key, value): one Engram fact per version. Its scope is the namespace's
  labels joined by '.', its subject the key (with a digest appended when Engram's
  case-folded comparison of subjects would mix it up with another key), its predicate
  `langgraph item`, its content the value as JSON text, its permanence `permanent` (items
  never decay), and its metadata the exact namespace and key.
- **put** on an existing key stores a new version: Engram supersedes the old fact and keeps
  it, so `history(namespace, key)` reads every version, newest first (and
  `GET /v1/facts/{id}/history` shows them too). Putting the same value again confirms the
  item instead of adding a version (its `updated_at` moves).
- **get** returns the active version; values survive byte for byte as JSON (key order,
  Unicode, numbers). `created_at` is the first version's time, `updated_at` the latest's.
- **delete** (and a put of `None`) deletes the item and every version for good.
- **search** with a query is one Engram search (hybrid by default, or `search_mode`) whose
  server-side filter keeps the items under the prefix, not put with index=False, that pass
  the filter; `score` is the hit's `similarity` (the cosine of the query to the item's best
  vector: comparable across queries, unlike the fused score, which only orders one query's
  hits; in keyword mode, the keyword rank), and results are ordered by it. A query search
  reads Engram's first 100 hits whatever the page, orders them by score and slices the page
  from them, so pages never share an item; `offset + limit` stop at 100. Without a query,
  items come newest first, read page by page through the same server-side filter until the
  page asked for is full.
- **index=False** on a put keeps the item out of query searches (it is still read by `get`
  and listed by a search without a query). Putting the same value again with another
  `index` confirms the stored version and keeps its setting; `index` as a list of fields is
  ignored (Engram indexes the whole value).
- **filter**: equality of top-level and nested fields, and `$eq`, `$ne`, `$gt`, `$gte`,
  `$lt`, `$lte`. Each value of at most 8,000 characters of JSON is also kept in its fact's
  metadata, so the server applies equality and ordering before it ranks or pages (Engram's
  filter language, docs/search.md); the store checks every item it gets back, which also
  covers `$ne`, values it could not copy and items stored before values were copied.
- **list_namespaces**: prefix and suffix (with '*' for one label), max_depth, limit, offset.
- **batch / abatch**: results are those of running the operations in order, each seeing
  the ones before it, but the operations go as a few bulk requests: one bulk read of every
  item got or put, one read of the store for the listings, one bulk delete and bulk stores
  of 100 (a put followed by a delete of the same item is never sent); a query search that
  follows a write starts a new round. `abatch` calls started together (each `aget`, `aput`,
  `asearch`, ... is one) run as one batch in the order they started; when that batch fails,
  each call runs again on its own so one bad operation fails only its caller. A put under
  the root label `langgraph` is refused by `put()` only, as LangGraph's stores do.

What it cannot do:

- **TTL**: Engram's facts do not expire (only episodes do), so `supports_ttl` is False and
  a put with a `ttl` raises NotImplementedError; `refresh_ttl` is ignored.
- **index**: Engram embeds and keyword-indexes every item's whole value with its own model;
  there is no `index` configuration (fields, embedding function) to give.
- `list_namespaces`, and a listing search in a batch that also writes (to see the batch's
  own writes in order), read every item's active fact, 200 per request: fine for an
  agent's memories, slow for millions of items.
- Limits of Engram's facts apply: a key or namespace of at most about 200 characters, a
  value of at most 50,000 characters of JSON; beyond them Engram answers 422
  (`EngramError`).
"""

import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from engram_client import _store_batch as batching
from engram_client import _store_ops as ops
from engram_client._http import EngramError, RetryPolicy
from engram_client.client import DEFAULT_TIMEOUT, AsyncEngramClient, EngramClient

__all__ = ["EngramStore"]


class EngramStore(BaseStore):
    """A LangGraph store whose items are Engram facts (see the module's documentation)."""

    supports_ttl = False

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        search_mode: str | None = None,
    ) -> None:
        self.search_mode = search_mode
        self.client = EngramClient(base_url, api_key=api_key, timeout=timeout, retry=retry)
        self.aclient = AsyncEngramClient(base_url, api_key=api_key, timeout=timeout, retry=retry)
        self._queued: list[tuple[list[batching.Op], asyncio.Future[list[Any]]]] = []
        self._flusher: asyncio.Task[None] | None = None

    def __enter__(self) -> "EngramStore":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> "EngramStore":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Close the blocking client's connections."""
        self.client.close()

    async def aclose(self) -> None:
        """Close both clients' connections."""
        self.client.close()
        await self.aclient.aclose()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations as if one after another, in a few bulk requests; one result
        each (None for a put)."""
        planned = [_planned(op) for op in ops]
        return _results(planned, self._run(batching.run(planned, self.search_mode)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` without blocking the event loop. Batches that callers start at the same
        time (each `aget`, `aput`, ... is one) run together as one batch, in the order they
        were started."""
        planned = [_planned(op) for op in ops]
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[list[Any]] = loop.create_future()
        self._queued.append((planned, waiting))
        if self._flusher is None or self._flusher.done():
            self._flusher = loop.create_task(self._flush())
        return _results(planned, await waiting)

    async def _flush(self) -> None:
        """Run every queued batch as one, and hand each caller its results."""
        await asyncio.sleep(0)  # let callers started together queue theirs
        while self._queued:
            queued, self._queued = self._queued, []
            try:
                done = await self._arun(
                    batching.run([op for planned, _ in queued for op in planned], self.search_mode)
                )
            except Exception:
                if len(queued) == 1:
                    _fail(queued[0][1])
                    continue
                # One caller's bad operation must not fail the others: each alone.
                for planned, waiting in queued:
                    try:
                        results = await self._arun(batching.run(planned, self.search_mode))
                    except Exception:
                        _fail(waiting)
                    else:
                        if not waiting.done():
                            waiting.set_result(results)
                continue
            start = 0
            for planned, waiting in queued:
                if not waiting.done():
                    waiting.set_result(done[start : start + len(planned)])
                start += len(planned)

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version of an item, newest first; empty when it does not exist."""
        _check_labels(namespace)
        return [_item(fields) for fields in self._run(ops.history(namespace, key))]

    async def ahistory(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version of an item, newest first (async)."""
        _check_labels(namespace)
        return [_item(fields) for fields in await self._arun(ops.history(namespace, key))]

    def _run(self, steps: ops.Steps) -> Any:
        try:
            call = next(steps)
            while True:
                try:
                    answer = self.client.request(call.method, call.path, **call.kwargs)
                except EngramError as error:
                    call = steps.throw(error)
                else:
                    call = steps.send(answer)
        except StopIteration as done:
            return done.value

    async def _arun(self, steps: ops.Steps) -> Any:
        try:
            call = next(steps)
            while True:
                try:
                    answer = await self.aclient.request(call.method, call.path, **call.kwargs)
                except EngramError as error:
                    call = steps.throw(error)
                else:
                    call = steps.send(answer)
        except StopIteration as done:
            return done.value


def _planned(op: Op) -> batching.Op:
    """The operation checked and in the store's terms."""
    if isinstance(op, GetOp):
        _check_labels(op.namespace)
        return batching.Get(tuple(op.namespace), op.key)
    if isinstance(op, PutOp):
        _check_put(op)
        return batching.Put(tuple(op.namespace), op.key, op.value, indexed=op.index is not False)
    if isinstance(op, SearchOp):
        _check_labels(op.namespace_prefix)
        return batching.Search(tuple(op.namespace_prefix), op.query, op.filter, op.limit, op.offset)
    if isinstance(op, ListNamespacesOp):
        conditions = op.match_conditions or ()
        for condition in conditions:
            _check_labels(condition.path)
        return batching.ListNamespaces(
            [tuple(c.path) for c in conditions if c.match_type == "prefix"],
            [tuple(c.path) for c in conditions if c.match_type == "suffix"],
            op.max_depth,
            op.limit,
            op.offset,
        )
    raise ValueError(f"unknown operation {type(op).__name__}")


def _results(planned: list[batching.Op], done: list[Any]) -> list[Result]:
    """LangGraph's results from the store's: items, search items, namespaces, None."""
    results: list[Result] = []
    for op, result in zip(planned, done, strict=True):
        if isinstance(op, batching.Get):
            results.append(None if result is None else _item(result))
        elif isinstance(op, batching.Search):
            results.append([_search_item(fields, score) for fields, score in result])
        else:
            results.append(result)
    return results


def _fail(waiting: "asyncio.Future[list[Any]]") -> None:
    """Hand the exception being handled to the caller waiting on `waiting`."""
    error = sys.exc_info()[1]
    if not waiting.done() and error is not None:
        waiting.set_exception(error)


def _item(fields: dict[str, Any]) -> Item:
    return Item(
        value=fields["value"],
        key=fields["key"],
        namespace=fields["namespace"],
        created_at=fields["created_at"],
        updated_at=fields["updated_at"],
    )


def _search_item(fields: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(
        namespace=fields["namespace"],
        key=fields["key"],
        value=fields["value"],
        created_at=fields["created_at"],
        updated_at=fields["updated_at"],
        score=score,
    )


def _check_labels(namespace: tuple[str, ...]) -> None:
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"namespace labels must be non-empty strings without '.' or NUL: {namespace!r}"
            )


def _check_put(op: PutOp) -> None:
    if not op.namespace:
        raise InvalidNamespaceError("namespace cannot be empty")
    _check_labels(op.namespace)
    if op.ttl is not None:
        raise NotImplementedError(
            "TTL is not supported by EngramStore: Engram's facts do not expire; put without a ttl"
        )
