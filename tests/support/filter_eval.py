"""A plain Python reading of the filter language, over memories (and the records of the
other lists: entities, ...) as the API returns them.

It follows the definitions in app/schemas/filters.py and nothing of the SQL compiler, so a
test can check that the database admits exactly the memories this admits.
"""

from datetime import datetime
from typing import Any

from app.schemas.filters import AllOf, AnyOf, Condition, MemoryFilter, Not

MISSING = object()
# The API's name of each filter field, per memory type (facts' and rules' butler is the
# butler that stored them).
_API_FIELD = {"butler": {"episode": "butler", "fact": "source_butler", "rule": "source_butler"}}
_FIELDS_BY_TYPE = {
    "episode": {"butler", "session_id", "importance", "created_at", "occurred_at", "expires_at"},
    "fact": {
        "butler",
        "scope",
        "subject",
        "predicate",
        "permanence",
        "validity",
        "importance",
        "confidence",
        "tags",
        "created_at",
        "valid_from",
        "valid_until",
        "last_confirmed_at",
    },
    "rule": {
        "butler",
        "scope",
        "permanence",
        "maturity",
        "confidence",
        "tags",
        "created_at",
        "last_confirmed_at",
    },
    "entity": {"entity_type", "canonical_name", "aliases", "created_at", "updated_at"},
}


def admits(tree: MemoryFilter, memory: dict[str, Any]) -> bool:
    """Whether `tree` admits `memory` (an API response of an episode, fact or rule, or of an
    entity, with its `memory_type` added)."""
    if isinstance(tree, AllOf):
        return all(admits(part, memory) for part in tree.parts)
    if isinstance(tree, AnyOf):
        return any(admits(part, memory) for part in tree.parts)
    if isinstance(tree, Not):
        return not admits(tree.part, memory)
    return _holds(tree, _value(tree, memory))


def _value(condition: Condition, memory: dict[str, Any]) -> Any:
    memory_type = memory["memory_type"]
    if condition.field == "memory_type":
        return memory_type
    if condition.field == "metadata":
        value: Any = memory.get("metadata") or {}
        for key in condition.path:
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
        return MISSING if value is None else value
    if condition.field not in _FIELDS_BY_TYPE[memory_type]:
        return MISSING
    name = _API_FIELD.get(condition.field, {}).get(memory_type, condition.field)
    value = memory.get(name)
    if value is None:
        return MISSING
    if condition.kind == "time":
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def _same(value: Any, scalar: Any) -> bool:
    """JSON equality of two scalars: booleans only equal booleans, numbers by value."""
    if isinstance(value, bool) or isinstance(scalar, bool):
        return isinstance(value, bool) and isinstance(scalar, bool) and value == scalar
    if isinstance(value, int | float) and isinstance(scalar, int | float):
        return float(value) == float(scalar)
    return type(value) is type(scalar) and value == scalar


def _equals(value: Any, scalar: Any) -> bool:
    if isinstance(value, list):
        return any(_same(item, scalar) for item in value)
    return _same(value, scalar)


def _ordered(op: str, value: Any, operand: Any) -> bool:
    kinds = (value, operand)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in kinds)
    strings = all(isinstance(v, str) for v in kinds)
    times = all(isinstance(v, datetime) for v in kinds)
    if not (numbers or strings or times):
        return False
    if op == "$gt":
        return bool(value > operand)
    if op == "$gte":
        return bool(value >= operand)
    if op == "$lt":
        return bool(value < operand)
    return bool(value <= operand)


def _holds(condition: Condition, value: Any) -> bool:
    op, operand = condition.op, condition.value
    if op == "$exists":
        return (value is not MISSING) == operand
    if op in ("$ne", "$nin"):
        positive = Condition(
            condition.field, condition.path, "$eq" if op == "$ne" else "$in", operand
        )
        return not _holds(positive, value)
    if value is MISSING:
        return False
    if op == "$eq":
        return _equals(value, operand)
    if op == "$in":
        return any(_equals(value, item) for item in operand)
    if op == "$contains":
        if isinstance(value, str):
            return operand in value
        return isinstance(value, list) and any(_same(item, operand) for item in value)
    return _ordered(op, value, operand)
