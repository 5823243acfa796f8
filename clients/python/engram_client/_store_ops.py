"""The store's operations as generators of API calls, run by a sync or an async driver.

Each operation yields `Call`s and receives each call's JSON answer (or has the call's
`EngramError` thrown into it), so the sync and async stores share one implementation.
"""

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from engram_client import _store_mapping as mapping
from engram_client._http import EngramError
from engram_client._store_mapping import Namespace

PAGE_SIZE = 200
MAX_SEARCH_RESULTS = 100


@dataclass(frozen=True)
class Call:
    """One request of the API."""

    method: str
    path: str
    params: dict[str, Any] | None = None
    json: Any = None
    kwargs: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        sent: dict[str, Any] = {}
        if self.params is not None:
            sent["params"] = self.params
        if self.json is not None:
            sent["json"] = self.json
        object.__setattr__(self, "kwargs", sent)


Steps = Generator[Call, Any, Any]


def find(namespace: Namespace, key: str) -> Steps:
    """The item's active fact, or None."""
    page = yield Call("GET", "/v1/facts", params=mapping.lookup_params(namespace, key))
    return next((fact for fact in page["items"] if mapping.is_item(fact, namespace, key)), None)


def get(namespace: Namespace, key: str) -> Steps:
    """The item's fields (namespace, key, value, times), or None."""
    fact = yield from find(namespace, key)
    return None if fact is None else mapping.item_fields(fact)


def put(namespace: Namespace, key: str, value: Mapping[str, Any] | None) -> Steps:
    """Store a new version of the item (Engram supersedes the old one), or delete it."""
    current = yield from find(namespace, key)
    if value is None:
        if current is not None:
            try:
                yield Call("DELETE", f"/v1/facts/{current['id']}")
            except EngramError as error:
                if error.status != 404:  # deleted meanwhile: the item is gone either way
                    raise
        return None
    first = None
    if current is not None:
        first = (mapping.marker_of(current) or {}).get("created_at") or current["created_at"]
    yield Call("POST", "/v1/facts", json=mapping.fact_body(namespace, key, value, first))
    return None


def history(namespace: Namespace, key: str) -> Steps:
    """Every version of the item, newest first (empty when there is none)."""
    fact = yield from find(namespace, key)
    if fact is None:
        return []
    versions = yield Call("GET", f"/v1/facts/{fact['id']}/history")
    return [
        mapping.item_fields(version)
        for version in versions
        if mapping.marker_of(version) is not None
    ]


def all_items() -> Steps:
    """The active fact of every item in the store, page by page."""
    facts: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"predicate": mapping.ITEM_PREDICATE, "limit": PAGE_SIZE}
        page = yield Call(
            "GET", "/v1/facts", params=params if cursor is None else {**params, "cursor": cursor}
        )
        facts.extend(fact for fact in page["items"] if mapping.marker_of(fact) is not None)
        cursor = page.get("next_cursor")
        if not cursor:
            return facts


def list_namespaces(
    prefixes: list[tuple[str, ...]],
    suffixes: list[tuple[str, ...]],
    max_depth: int | None,
    limit: int,
    offset: int,
) -> Steps:
    """The namespaces holding items, matched, cut to max_depth and paged."""
    facts = yield from all_items()
    namespaces = {ns for fact in facts if (ns := mapping.namespace_of(fact)) is not None}
    return mapping.select_namespaces(
        namespaces,
        prefixes=prefixes,
        suffixes=suffixes,
        max_depth=max_depth,
        limit=limit,
        offset=offset,
    )


def search(
    prefix: Namespace,
    query: str | None,
    wanted: dict[str, Any] | None,
    limit: int,
    offset: int,
    mode: str | None,
) -> Steps:
    """Items under the prefix passing the filter: ranked by Engram's search when there is a
    query, newest first otherwise; each as (fields, score). The server filters by namespace,
    index and what it can of `wanted` (`mapping.server_filter`), before it ranks or pages."""
    wanted_here = mapping.server_filter(prefix, wanted, indexed_only=bool(query and query.strip()))
    if not (query and query.strip()):
        found: list[tuple[dict[str, Any], float | None]] = []
        cursor = None
        # Pages come newest stored first; enough are read to fill the page asked for.
        while len(found) < offset + limit:
            params = {
                "filter": json.dumps(wanted_here),
                "limit": PAGE_SIZE,
                **({"cursor": cursor} if cursor else {}),
            }
            page = yield Call("GET", "/v1/facts", params=params)
            found += [
                (fields, None)
                for fact in page["items"]
                if (fields := _passing(fact, prefix, wanted)) is not None
            ]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        found.sort(key=lambda pair: pair[0]["updated_at"], reverse=True)
        return found[offset : offset + limit]
    # Always the same pool, re-ordered by score and sliced: a pool of `offset + limit` hits
    # would hold another set for each page, and two pages could share an item.
    body = {
        "query": query,
        "types": ["fact"],
        "limit": MAX_SEARCH_RESULTS,
        "min_confidence": 0.0,
        "mode": mode,
        "filter": wanted_here,
    }
    answer = yield Call("POST", "/v1/search", json={k: v for k, v in body.items() if v is not None})
    ranked = [
        (fields, mapping.hit_score(hit))
        for hit in answer["results"]
        if mapping.is_indexed(hit) and (fields := _passing(hit, prefix, wanted)) is not None
    ]
    ranked.sort(key=lambda pair: -(pair[1] or 0.0))
    return ranked[offset : offset + limit]


def _passing(
    fact: dict[str, Any], prefix: Namespace, wanted: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The item's fields when the fact is a store item under `prefix` passing `wanted`."""
    namespace = mapping.namespace_of(fact)
    if namespace is None or not mapping.has_prefix(namespace, prefix):
        return None
    fields = mapping.item_fields(fact)
    return fields if mapping.matches(fields["value"], wanted) else None
