"""A batch of store operations as a few bulk requests, with the results of running them in order.

A batch is cut into segments: a segment ends before a query search that follows a write (that
search must see the write on the server). In a segment every item read or written is looked up
with one bulk read, listings read the store once, writes are folded per item (a delete and what
came before it need only the delete) and sent as one bulk delete and bulk stores, and each read
after a write of its item answers from that write.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engram_client import _store_mapping as mapping
from engram_client import _store_ops as ops
from engram_client._store_mapping import Namespace
from engram_client._store_ops import Call, Steps

BULK_READ = 1000  # the server's limit on items a bulk request
BULK_STORE = 100  # the server's limit on facts a bulk store

Key = tuple[Namespace, str]


@dataclass(frozen=True)
class Get:
    namespace: Namespace
    key: str


@dataclass(frozen=True)
class Put:
    """A new version of an item (`value` None: delete it); `indexed` False keeps it out of
    query searches."""

    namespace: Namespace
    key: str
    value: Mapping[str, Any] | None
    indexed: bool = True


@dataclass(frozen=True)
class Search:
    prefix: Namespace
    query: str | None
    filter: dict[str, Any] | None
    limit: int
    offset: int


@dataclass(frozen=True)
class ListNamespaces:
    prefixes: list[Namespace]
    suffixes: list[Namespace]
    max_depth: int | None
    limit: int
    offset: int


Op = Get | Put | Search | ListNamespaces
# What an item is at a point of the segment: the result of a put (by its op's position) or
# deleted (None).
Written = int | None


def _has_query(op: Op) -> bool:
    return isinstance(op, Search) and bool(op.query and op.query.strip())


def run(batch: Sequence[Op], mode: str | None) -> Steps:
    """The results of the operations as if run one after another: item fields (or None) for
    a get, None for a put, (fields, score) pairs for a search, namespaces for a listing."""
    results: list[Any] = [None] * len(batch)
    start = 0
    while start < len(batch):
        end, wrote = start, False
        while end < len(batch) and not (wrote and _has_query(batch[end])):
            wrote = wrote or isinstance(batch[end], Put)
            end += 1
        yield from _segment(batch, range(start, end), results, mode)
        start = end
    return results


def _segment(batch: Sequence[Op], positions: range, results: list[Any], mode: str | None) -> Steps:
    keyed: list[Key] = []
    for i in positions:
        op = batch[i]
        if isinstance(op, Get | Put) and op.namespace:
            keyed.append((op.namespace, op.key))
    current = yield from _current(list(dict.fromkeys(keyed)))
    # A listing search in a segment that writes reads a snapshot of every item, to see the
    # segment's own writes in order; without writes, the server filters and pages it.
    writing = any(isinstance(batch[i], Put) for i in positions)
    snapshot: dict[Key, dict[str, Any]] | None = None
    if any(
        isinstance(batch[i], ListNamespaces)
        or (isinstance(batch[i], Search) and writing and not _has_query(batch[i]))
        for i in positions
    ):
        snapshot = {}
        for fact in (yield from ops.all_items()):
            fields = mapping.item_fields(fact)
            snapshot[(fields["namespace"], fields["key"])] = fields

    overlay: dict[Key, Written] = {}
    writes: dict[Key, list[int]] = {}
    later: list[tuple[int, Any]] = []  # reads answered once the writes are done
    for i in positions:
        op = batch[i]
        if isinstance(op, Put):
            key = (op.namespace, op.key)
            overlay[key] = None if op.value is None else i
            writes.setdefault(key, []).append(i)
        elif isinstance(op, Get):
            key = (op.namespace, op.key)
            if key in overlay:
                later.append((i, overlay[key]))
            else:
                fact = current.get(key)
                results[i] = None if fact is None else mapping.item_fields(fact)
        elif isinstance(op, Search) and (_has_query(op) or not writing):
            results[i] = yield from ops.search(
                op.prefix, op.query, op.filter, op.limit, op.offset, mode
            )
        else:
            later.append((i, dict(overlay)))

    stored = yield from _write(batch, writes, current)
    now = datetime.now(UTC)

    def fields_of(position: Written) -> dict[str, Any] | None:
        if position is None:
            return None
        if position in stored:
            return mapping.item_fields(stored[position])
        put = batch[position]
        assert isinstance(put, Put) and put.value is not None
        # A version a later write of the batch replaced before it was stored.
        return {
            "namespace": put.namespace,
            "key": put.key,
            "value": dict(put.value),
            "created_at": now,
            "updated_at": now,
        }

    for i, seen in later:
        if not isinstance(seen, dict):
            results[i] = fields_of(seen)
            continue
        assert snapshot is not None
        items = dict(snapshot)
        for key, position in seen.items():
            written = fields_of(position)
            if written is None:
                items.pop(key, None)
            else:
                items[key] = written
        results[i] = _listing(batch[i], list(items.values()))


def _listing(op: Op, items: list[dict[str, Any]]) -> Any:
    """A search without a query, or a namespace listing, over the items' fields."""
    if isinstance(op, ListNamespaces):
        return mapping.select_namespaces(
            {item["namespace"] for item in items},
            prefixes=op.prefixes,
            suffixes=op.suffixes,
            max_depth=op.max_depth,
            limit=op.limit,
            offset=op.offset,
        )
    assert isinstance(op, Search)
    found = [
        (item, None)
        for item in items
        if mapping.has_prefix(item["namespace"], op.prefix)
        and mapping.matches(item["value"], op.filter)
    ]
    found.sort(key=lambda pair: pair[0]["updated_at"], reverse=True)
    return found[op.offset : op.offset + op.limit]


def _current(keys: list[Key]) -> Steps:
    """The active fact of each item (missing: none), by bulk reads."""
    found: dict[Key, dict[str, Any]] = {}
    for start in range(0, len(keys), BULK_READ):
        chunk = keys[start : start + BULK_READ]
        refs = [
            {
                "scope": mapping.scope_of(ns),
                "subject": mapping.subject_of(key),
                "predicate": mapping.ITEM_PREDICATE,
            }
            for ns, key in chunk
        ]
        answer = yield Call("POST", "/v1/facts/bulk/get", json={"items": refs})
        for (ns, key), result in zip(chunk, answer["items"], strict=True):
            fact = result.get("fact")
            if fact is not None and mapping.is_item(fact, ns, key):
                found[(ns, key)] = fact
    return found


def _write(
    batch: Sequence[Op], writes: dict[Key, list[int]], current: dict[Key, dict[str, Any]]
) -> Steps:
    """Send the segment's writes: one bulk delete of the items a put of None removes, then
    the puts after each item's last delete, in order. The stored facts by op position."""
    doomed: list[str] = []
    sent: list[int] = []
    first: dict[Key, str] = {}  # the first version's time, kept in each version's marker
    for key, positions in writes.items():
        deletes = [j for j in positions if _put(batch, j).value is None]
        if deletes and key in current:
            doomed.append(current[key]["id"])
        elif key in current:
            marker = mapping.marker_of(current[key]) or {}
            first[key] = marker.get("created_at") or current[key]["created_at"]
        sent += [j for j in positions if not deletes or j > deletes[-1]]
    for start in range(0, len(doomed), BULK_READ):
        yield Call(
            "POST",
            "/v1/facts/bulk/delete",
            json={"items": [{"id": fact_id} for fact_id in doomed[start : start + BULK_READ]]},
        )
    stored: dict[int, dict[str, Any]] = {}
    sent.sort()
    for start in range(0, len(sent), BULK_STORE):
        chunk = sent[start : start + BULK_STORE]
        bodies = []
        for j in chunk:
            put = _put(batch, j)
            assert put.value is not None
            bodies.append(
                mapping.fact_body(
                    put.namespace,
                    put.key,
                    put.value,
                    first.get((put.namespace, put.key)),
                    indexed=put.indexed,
                )
            )
        answer = yield Call("POST", "/v1/facts/bulk", json={"items": bodies})
        for j, result in zip(chunk, answer["items"], strict=True):
            stored[j] = result["fact"]
            put = _put(batch, j)
            first.setdefault((put.namespace, put.key), result["fact"]["created_at"])
    return stored


def _put(batch: Sequence[Op], position: int) -> Put:
    op = batch[position]
    assert isinstance(op, Put)
    return op
