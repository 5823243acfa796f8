"""How LangGraph store items sit in Engram facts, as pure functions (no I/O, no langgraph)."""

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

# Every item is a fact with this predicate; the exact namespace and key live in metadata.
ITEM_PREDICATE = "langgraph item"
MARKER = "langgraph_store"
MAX_NAME_CHARS = 200
# A value whose JSON is at most this long (and nests at most VALUE_COPY_DEPTH levels) is also
# kept in the fact's metadata, where the server's filter language reaches its fields.
VALUE_COPY_CHARS = 8_000
VALUE_COPY_DEPTH = 5
_DIGEST_CHARS = 16
_KEPT_KEY_CHARS = 150

Namespace = tuple[str, ...]


def scope_of(namespace: Sequence[str]) -> str:
    """The fact scope of a namespace: its labels joined by '.', which no label contains."""
    return ".".join(namespace)


def subject_of(key: str) -> str:
    """The fact subject of a key, distinct for distinct keys under Engram's key comparison.

    Engram compares subjects case-folded with whitespace collapsed, so "Doc" and "doc" would
    be one fact; a key that comparison could change (or too long for a subject) gets a digest
    of its exact text appended, and a key it leaves alone is the subject as is.
    """
    if 0 < len(key) <= MAX_NAME_CHARS and all("!" <= c <= "~" and not c.isupper() for c in key):
        return key
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]
    return f"{key[:_KEPT_KEY_CHARS]} #{digest}"


def value_text(value: Mapping[str, Any]) -> str:
    """The item's value as JSON text: the fact's content, read back unchanged."""
    return json.dumps(dict(value), ensure_ascii=False, allow_nan=False)


def fact_body(
    namespace: Namespace,
    key: str,
    value: Mapping[str, Any],
    first_created_at: str | None,
    *,
    indexed: bool = True,
) -> dict[str, Any]:
    """The POST /v1/facts body that stores a version of the item (`indexed` False: query
    searches leave it out)."""
    marker: dict[str, Any] = {
        "namespace": list(namespace),
        "key": key,
        "prefixes": [scope_of(namespace[:n]) for n in range(1, len(namespace) + 1)],
    }
    if first_created_at is not None:
        marker["created_at"] = first_created_at
    if not indexed:
        marker["index"] = False
    text = value_text(value)
    if (
        len(text) <= VALUE_COPY_CHARS
        and "\\u0000" not in text
        and _depth(value) <= VALUE_COPY_DEPTH
    ):
        marker["value"] = dict(value)
    return {
        "subject": subject_of(key),
        "predicate": ITEM_PREDICATE,
        "content": value_text(value),
        "scope": scope_of(namespace),
        "permanence": "permanent",
        "metadata": {MARKER: marker},
    }


def lookup_params(namespace: Namespace, key: str) -> dict[str, Any]:
    """GET /v1/facts parameters that find the item's active fact."""
    return {
        "scope": scope_of(namespace),
        "subject": subject_of(key),
        "predicate": ITEM_PREDICATE,
        "limit": 5,
    }


def marker_of(fact: Mapping[str, Any]) -> dict[str, Any] | None:
    """The item's namespace and key when the fact holds a store item, else None."""
    marker = (fact.get("metadata") or {}).get(MARKER)
    if (
        fact.get("predicate") != ITEM_PREDICATE
        or not isinstance(marker, dict)
        or not isinstance(marker.get("key"), str)
        or not isinstance(marker.get("namespace"), list)
    ):
        return None
    return marker


def namespace_of(fact: Mapping[str, Any]) -> Namespace | None:
    """The item's namespace, or None for a fact that is not a store item."""
    marker = marker_of(fact)
    return None if marker is None else tuple(marker["namespace"])


def is_item(fact: Mapping[str, Any], namespace: Namespace, key: str) -> bool:
    """Whether the fact holds exactly this item."""
    marker = marker_of(fact)
    return marker is not None and (tuple(marker["namespace"]), marker["key"]) == (namespace, key)


def item_fields(fact: Mapping[str, Any]) -> dict[str, Any]:
    """Namespace, key, value and times of the item a fact holds (a store item's fact)."""
    marker = marker_of(fact)
    assert marker is not None
    stored = datetime.fromisoformat(fact["created_at"])
    confirmed = fact.get("last_confirmed_at")
    updated = max(stored, datetime.fromisoformat(confirmed)) if confirmed else stored
    first = marker.get("created_at")
    return {
        "namespace": tuple(marker["namespace"]),
        "key": marker["key"],
        "value": json.loads(fact["content"]),
        "created_at": datetime.fromisoformat(first) if first else stored,
        "updated_at": updated,
    }


def is_indexed(fact: Mapping[str, Any]) -> bool:
    """Whether query searches may find the item (it was not put with `index=False`)."""
    return (marker_of(fact) or {}).get("index") is not False


def hit_score(hit: Mapping[str, Any]) -> float | None:
    """A search hit's score, comparable across queries: its similarity (the cosine of the
    query to the item's best vector); in keyword mode, its keyword rank."""
    for name in ("similarity", "rank"):
        if hit.get(name) is not None:
            return float(hit[name])
    return None


def has_prefix(namespace: Namespace, prefix: Sequence[str], *, wildcard: bool = False) -> bool:
    """Whether the namespace starts with these labels (with `wildcard`, '*' matches any one
    label; without, it is a label like any other)."""
    return len(namespace) >= len(prefix) and all(
        want == have or (wildcard and want == "*")
        for have, want in zip(namespace, prefix, strict=False)
    )


def has_suffix(namespace: Namespace, suffix: Sequence[str]) -> bool:
    """Whether the namespace ends with these labels ('*' matches any one label)."""
    return has_prefix(tuple(reversed(namespace)), tuple(reversed(suffix)), wildcard=True)


def select_namespaces(
    namespaces: Iterable[Namespace],
    *,
    prefixes: Iterable[Sequence[str]],
    suffixes: Iterable[Sequence[str]],
    max_depth: int | None,
    limit: int,
    offset: int,
) -> list[Namespace]:
    """list_namespaces on a set of namespaces: match, cut to max_depth, sort, page."""
    prefixes, suffixes = list(prefixes), list(suffixes)
    kept = {
        ns
        for ns in namespaces
        if all(has_prefix(ns, p, wildcard=True) for p in prefixes)
        and all(has_suffix(ns, s) for s in suffixes)
    }
    if max_depth is not None:
        kept = {ns[:max_depth] for ns in kept}
    return sorted(kept)[offset : offset + limit]


def matches(value: Any, wanted: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a store filter: equality of (nested) fields, or the
    operators $eq, $ne, $gt, $gte, $lt and $lte. A key with dots that the value does not
    hold as it is reads a nested field ("user.city" is value["user"]["city"])."""
    if not wanted:
        return True
    if not isinstance(value, Mapping):
        return False
    return all(_field_matches(_at(value, name), condition) for name, condition in wanted.items())


def _at(value: Mapping[str, Any], name: str) -> Any:
    """The field `name` of `value`, or the nested field its dotted path names."""
    if name in value or not isinstance(name, str) or "." not in name:
        return value.get(name)
    found: Any = value
    for part in name.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _field_matches(actual: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
        return all(_compare(actual, op, operand) for op, operand in condition.items())
    if isinstance(condition, Mapping):
        return matches(actual, condition)
    return bool(actual == condition)


def _compare(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {op!r}")
    if actual is None or isinstance(actual, bool) != isinstance(operand, bool):
        return False
    try:
        if op == "$gt":
            return bool(actual > operand)
        if op == "$gte":
            return bool(actual >= operand)
        if op == "$lt":
            return bool(actual < operand)
        return bool(actual <= operand)
    except TypeError:
        return False


def _depth(value: Any) -> int:
    if isinstance(value, Mapping):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def server_filter(
    prefix: Sequence[str], wanted: Mapping[str, Any] | None, *, indexed_only: bool
) -> dict[str, Any]:
    """An Engram filter admitting at least the items under `prefix` that pass `wanted`
    (and, with `indexed_only`, were not put with index=False): what the server can decide
    of a LangGraph filter. The store still checks each item it gets back, so an item the
    server cannot judge (stored before values were copied, a large value) is let through."""
    field = f"metadata.{MARKER}"
    conditions: list[dict[str, Any]] = [{"predicate": ITEM_PREDICATE}]
    if prefix:
        conditions.append(
            {
                "$or": [
                    {f"{field}.prefixes": scope_of(prefix)},
                    {f"{field}.prefixes": {"$exists": False}},
                ]
            }
        )
    if indexed_only:
        conditions.append({f"{field}.index": {"$ne": False}})
    on_value = _value_conditions(wanted or {}, (f"{field}.value",))
    if on_value:
        conditions.append({"$or": [{"$and": on_value}, {f"{field}.value": {"$exists": False}}]})
    return {"$and": conditions}


def _value_conditions(wanted: Mapping[str, Any], path: tuple[str, ...]) -> list[dict[str, Any]]:
    """The conditions of `wanted` the server reads exactly as `matches` does; the others
    are left to `matches`."""
    out: list[dict[str, Any]] = []
    for name, condition in wanted.items():
        if (
            not isinstance(name, str)
            or not name
            or "." in name
            or name.startswith("$")
            or len(path) >= 6
        ):
            continue
        field = ".".join((*path, name))
        if isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition):
            for op, operand in condition.items():
                if op == "$eq" and _unambiguous(operand):
                    out.append({field: operand})
                elif (
                    op in ("$gt", "$gte", "$lt", "$lte")
                    and _sendable(operand)
                    and not isinstance(operand, bool)
                ):
                    out.append({field: {op: operand}})
        elif isinstance(condition, Mapping):
            out += _value_conditions(condition, (*path, name))
        elif _unambiguous(condition):
            out.append({field: condition})
    return out[:40]


def _unambiguous(operand: Any) -> bool:
    """A value the server's `$eq` compares as Python's `==` does: a string, or a number
    Python would not also find equal to a boolean."""
    if isinstance(operand, bool) or not _sendable(operand):
        return False
    return isinstance(operand, str) or operand not in (0, 1)


def _sendable(operand: Any) -> bool:
    """A string or number the server's filter takes: no NUL character (stored text holds
    none), no infinity or NaN; the store's own check judges the others."""
    if isinstance(operand, str):
        return "\x00" not in operand
    return isinstance(operand, int) or isinstance(operand, float) and math.isfinite(operand)
