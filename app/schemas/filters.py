"""The filter language of search, recall, context and every list: parsed and checked.

A filter is a JSON object. Each key is a field (`butler`, `metadata.topic`, ...) mapped to a
value (shorthand for `$eq`) or to an object of conditions (`{"$gte": 3, "$lt": 7}`, AND-ed),
or one of the combinators `$and` / `$or` (a list of filters) and `$not` (one filter). Keys of
one object are AND-ed. `parse_filter` turns it into a tree of `Condition`, `AllOf`, `AnyOf` and
`Not`; `app/repositories/memory_filters.py` compiles that tree to SQL.

What a condition means (the same in SQL and in `tests/support/filter_eval.py`):

* A field is *missing* on a memory when its type has no such field (`subject` of an episode),
  the column is NULL, or the metadata path is absent or JSON null.
* `$eq c`: present and equal to `c` (same JSON type; numbers by value), or an array holding an
  element equal to `c`. `$ne`: not `$eq`. `$in [..]`: `$eq` one of them. `$nin`: not `$in`.
* `$gt $gte $lt $lte c`: present, of `c`'s kind (number, string by code point, time) and
  ordered so; arrays never are.
* `$contains c`: a string holding `c` as a substring, or an array holding an element equal to it.
* `$exists true|false`: the field is present | missing.
"""

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

MAX_FILTER_DEPTH = 6
MAX_FILTER_CONDITIONS = 64
MAX_IN_VALUES = 100
MAX_FILTER_STRING_CHARS = 1000
MAX_METADATA_PATH_SEGMENTS = 8

FieldKind = Literal["text", "number", "time", "tags", "json", "type"]
# Every first-class field a filter may name, with the kind of value it holds. Which memory
# type has which field is in app/repositories/memory_filters.py.
FIELDS: dict[str, FieldKind] = {
    "memory_type": "type",
    "butler": "text",
    "scope": "text",
    "session_id": "text",
    "subject": "text",
    "predicate": "text",
    "permanence": "text",
    "validity": "text",
    "maturity": "text",
    "importance": "number",
    "confidence": "number",
    "tags": "tags",
    "created_at": "time",
    "occurred_at": "time",
    "expires_at": "time",
    "valid_from": "time",
    "valid_until": "time",
    "last_confirmed_at": "time",
}
METADATA = "metadata"
# The fields of each list of records other than memories, with their kinds; `metadata` marks
# a list whose records have a metadata object. Their columns: app/repositories/memory_filters.py.
RECORD_FIELDS: dict[str, dict[str, FieldKind]] = {
    "entity": {
        METADATA: "json",
        "entity_type": "text",
        "canonical_name": "text",
        "aliases": "tags",
        "created_at": "time",
        "updated_at": "time",
    },
    "run": {
        METADATA: "json",
        "task_id": "text",
        "agent_version": "text",
        "task_version": "text",
        "rubric_version": "text",
        "score_numeric": "number",
        "started_at": "time",
        "finished_at": "time",
        "created_at": "time",
    },
    "procedure": {
        "agent_id": "text",
        "name": "text",
        "status": "text",
        "version": "number",
        "execution_count": "number",
        "success_rate": "number",
        "last_executed_at": "time",
        "created_at": "time",
        "updated_at": "time",
    },
    "arc": {
        "scope": "text",
        "arc_type": "text",
        "status": "text",
        "title": "text",
        "outcome": "text",
        "started_at": "time",
        "ended_at": "time",
        "created_at": "time",
        "updated_at": "time",
    },
    "link": {
        "relation": "text",
        "source_type": "text",
        "target_type": "text",
        "strength": "number",
        "reasoning": "text",
        "created_by": "text",
        "created_at": "time",
    },
}
LIST_NAMES = {
    "entity": "entities",
    "run": "runs",
    "procedure": "procedures",
    "arc": "arcs",
    "link": "links",
}
_KINDS: dict[str, FieldKind] = {
    **{
        name: kind
        for fields in RECORD_FIELDS.values()
        for name, kind in fields.items()
        if name != METADATA
    },
    **FIELDS,
}
COMPARISONS = ("$gt", "$gte", "$lt", "$lte")
OPERATORS = ("$eq", "$ne", *COMPARISONS, "$in", "$nin", "$exists", "$contains")
Scalar = str | int | float | bool


@dataclass(frozen=True)
class Condition:
    """One operator applied to one field: `field` a first-class name or `metadata`, with
    `path` the keys under metadata (empty otherwise)."""

    field: str
    path: tuple[str, ...]
    op: str
    value: Any  # a scalar, a datetime (time fields), a tuple ($in/$nin) or a bool ($exists)

    @property
    def kind(self) -> FieldKind:
        """The kind of value the field holds."""
        return "json" if self.field == METADATA else _KINDS[self.field]


@dataclass(frozen=True)
class AllOf:
    """Every part holds."""

    parts: tuple["MemoryFilter", ...]


@dataclass(frozen=True)
class AnyOf:
    """At least one part holds."""

    parts: tuple["MemoryFilter", ...]


@dataclass(frozen=True)
class Not:
    """The part does not hold."""

    part: "MemoryFilter"


MemoryFilter = Condition | AllOf | AnyOf | Not


class FilterError(ValueError):
    """A filter that is not well formed; the message starts with where in it."""


def parse_filter(raw: Any, record_type: str | None = None) -> MemoryFilter:
    """The tree of a filter object, or FilterError naming the path and the operator.

    Without `record_type` the fields are the memories' (FIELDS); with one (a key of
    RECORD_FIELDS) only that list's fields, and any other is an error naming the field."""
    parser = _Parser(record_type)
    tree = parser.node(raw, "filter", 1)
    return tree


def record_fields_text(record_type: str) -> str:
    """The fields a list takes, as its error messages and descriptions name them."""
    names = [
        f"{METADATA}.<key>" if name == METADATA else name for name in RECORD_FIELDS[record_type]
    ]
    return ", ".join(names)


class _Parser:
    def __init__(self, record_type: str | None) -> None:
        self.conditions = 0
        self.record_type = record_type

    def node(self, raw: Any, where: str, depth: int) -> MemoryFilter:
        if depth > MAX_FILTER_DEPTH:
            raise FilterError(f"{where}: filters nest at most {MAX_FILTER_DEPTH} levels")
        if not isinstance(raw, dict) or not raw:
            raise FilterError(f"{where}: must be a non-empty object of fields and combinators")
        parts = [self.entry(key, value, f"{where}.{key}", depth) for key, value in raw.items()]
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def entry(self, key: Any, value: Any, where: str, depth: int) -> MemoryFilter:
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise FilterError(f"{where}: takes a non-empty list of filters")
            parts = tuple(
                self.node(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)
            )
            return AllOf(parts) if key == "$and" else AnyOf(parts)
        if key == "$not":
            return Not(self.node(value, where, depth + 1))
        if isinstance(key, str) and key.startswith("$"):
            raise FilterError(
                f"{where}: unknown combinator {key}; use $and, $or or $not "
                "(operators go inside a field's object)"
            )
        field, path = self.field(key, where)
        if isinstance(value, dict):
            if not value:
                raise FilterError(f"{where}: needs at least one operator")
            conditions = [
                self.condition(field, path, op, operand, f"{where}.{op}")
                for op, operand in value.items()
            ]
            return conditions[0] if len(conditions) == 1 else AllOf(tuple(conditions))
        return self.condition(field, path, "$eq", value, f"{where}.$eq")

    def field(self, key: str, where: str) -> tuple[str, tuple[str, ...]]:
        fields: dict[str, FieldKind] = (
            FIELDS if self.record_type is None else RECORD_FIELDS[self.record_type]
        )
        if key in fields and key != METADATA:
            return key, ()
        if key.startswith(METADATA + ".") and (self.record_type is None or METADATA in fields):
            path = tuple(key.split(".")[1:])
            if not all(path) or len(path) > MAX_METADATA_PATH_SEGMENTS:
                raise FilterError(
                    f"{where}: a metadata path is 1 to "
                    f"{MAX_METADATA_PATH_SEGMENTS} non-empty keys joined by '.'"
                )
            return METADATA, path
        if self.record_type is not None:
            raise FilterError(
                f"{where}: unknown field {key!r} for "
                f"{LIST_NAMES[self.record_type]}; this list takes "
                f"{record_fields_text(self.record_type)}"
            )
        known = ", ".join(FIELDS)
        raise FilterError(
            f"{where}: unknown field {key!r}; filter on metadata.<key> or one of {known}"
        )

    def condition(
        self, field: str, path: tuple[str, ...], op: str, operand: Any, where: str
    ) -> Condition:
        self.conditions += 1
        if self.conditions > MAX_FILTER_CONDITIONS:
            raise FilterError(f"{where}: a filter holds at most {MAX_FILTER_CONDITIONS} conditions")
        if op not in OPERATORS:
            raise FilterError(f"{where}: unknown operator {op}; use one of " + " ".join(OPERATORS))
        kind: FieldKind = "json" if field == METADATA else _KINDS[field]
        return Condition(field, path, op, _operand(kind, op, operand, where))


def _operand(kind: FieldKind, op: str, operand: Any, where: str) -> Any:
    """The operand checked against the operator and the field's kind."""
    if op == "$exists":
        if not isinstance(operand, bool):
            raise FilterError(f"{where}: takes true or false")
        return operand
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not 1 <= len(operand) <= MAX_IN_VALUES:
            raise FilterError(f"{where}: takes a list of 1 to {MAX_IN_VALUES} values")
        return tuple(
            _scalar(kind, op, item, f"{where}[{index}]") for index, item in enumerate(operand)
        )
    value = _scalar(kind, op, operand, where)
    if op in COMPARISONS and (isinstance(value, bool) or kind in ("tags", "type")):
        raise FilterError(f"{where}: orders numbers, strings and times only")
    if op == "$contains" and not isinstance(value, str):
        raise FilterError(f"{where}: takes a string")
    return value


def _scalar(kind: FieldKind, op: str, value: Any, where: str) -> Scalar | datetime:
    """One value of a condition, of the kind its field holds."""
    if isinstance(value, str) and len(value) > MAX_FILTER_STRING_CHARS:
        raise FilterError(f"{where}: strings are at most {MAX_FILTER_STRING_CHARS} characters")
    if isinstance(value, str) and "\x00" in value:
        raise FilterError(f"{where}: must not contain NUL characters")
    if kind == "json":
        if not isinstance(value, str | int | float | bool) or value != value:
            raise FilterError(f"{where}: takes a string, a number or a boolean")
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise FilterError(f"{where}: takes a finite number")
        return value
    if kind == "number":
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or value != value
            or value in (float("inf"), float("-inf"))
        ):
            raise FilterError(f"{where}: takes a finite number")
        return float(value)
    if kind == "time":
        try:
            moment = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise FilterError(
                f"{where}: takes an ISO 8601 time with a time zone, e.g. 2024-05-01T00:00:00Z"
            )
        return moment
    if not isinstance(value, str):
        raise FilterError(f"{where}: takes a string")
    return value


def filter_tree(raw: dict[str, Any] | None) -> MemoryFilter | None:
    """The tree of a request's (already checked) filter; None without one."""
    return None if raw is None else parse_filter(raw)


def _parsed(raw: dict[str, Any]) -> dict[str, Any]:
    parse_filter(raw)
    return raw


def _from_json_text(raw: Any) -> Any:
    """A filter given as JSON text (a query parameter) becomes its object."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise FilterError(f"filter: not valid JSON ({exc.msg})") from None
    return raw


_SYNTAX = """\
A JSON object like mem0's or MongoDB's: `{"metadata.topic": "work", "importance": {"$gte": 7}}`.
Each key is a field mapped to a value (equality) or to an object of operators (AND-ed); keys
of one object are AND-ed; `$and` and `$or` take a list of filters, `$not` one filter.
"""
_OPERATORS = """Operators: `$eq $ne $gt $gte $lt $lte $in $nin $exists $contains`.
* A field is missing when the memory's type has no such field, it is null, or the metadata
  path is absent or null. A missing field fails every operator except `$ne`, `$nin` and
  `$exists: false`.
* `$eq`: equal (same JSON type; numbers by value), or an array holding an equal element
  (`{"tags": "urgent"}`). `$in`: `$eq` to one of up to 100 values; `$nin`, `$ne`: the opposite.
* `$gt $gte $lt $lte`: numbers by value, strings by code point, times in time; the operand's
  kind must match the value's.
* `$contains`: a substring of a string, or an element of an array.

At most 64 conditions, nested at most 6 levels. A malformed filter is a 422 whose message
names the path and the operator, e.g. `filter.$or[1].importance.$gt: takes a finite number`.
"""
FILTER_DESCRIPTION = (
    """Only memories this filter admits are searched or listed; it is applied
in the database before ranking and paging, so the results are the best ones it admits.

"""
    + _SYNTAX
    + """
Fields: `metadata.<key>[.<key>...]`, `memory_type`, `butler` (the butler that stored it),
`scope`, `session_id` (an episode's, else its `inferred_session`), `subject`, `predicate`,
`permanence`, `validity`, `maturity`, `importance`, `confidence` (as stored), `tags`, and the
times `created_at`, `occurred_at`, `expires_at`, `valid_from`, `valid_until`,
`last_confirmed_at` (ISO 8601 with a zone).

"""
    + _OPERATORS
)


_FIELD_NOTES = {
    "run": " (`metadata.<key>` reads the run's `meta`)",
    "entity": " (`aliases` is an array: `$eq` and `$contains` match an element)",
    "arc": " (`scope` is the butler whose episodes the arc clusters)",
}


def record_filter_description(record_type: str) -> str:
    """The description of the `filter` of one list of records (entities, runs, ...)."""
    plural = LIST_NAMES[record_type]
    fields = ", ".join(f"`{name}`" for name in record_fields_text(record_type).split(", "))
    times = [name for name, kind in RECORD_FIELDS[record_type].items() if kind == "time"]
    return (
        f"Only {plural} this filter admits are listed; it is applied in the database "
        "before paging, together with the other query parameters.\n\n"
        + _SYNTAX
        + f"\nFields of {plural}: {fields}{_FIELD_NOTES.get(record_type, '')}; the "
        f"times ({', '.join(times)}) are ISO 8601 with a zone. Any other field is a 422 "
        "naming it and the fields this list takes.\n\n"
        + _OPERATORS.replace("the memory's type has no such field, ", "")
    )


FilterIn = Annotated[
    dict[str, Any] | None,
    BeforeValidator(_from_json_text),
    AfterValidator(lambda raw: None if raw is None else _parsed(raw)),
    Field(
        description=FILTER_DESCRIPTION,
        examples=[
            {"metadata.topic": "work", "importance": {"$gte": 7}},
            {"$or": [{"tags": "urgent"}, {"created_at": {"$gte": "2024-05-01T00:00:00Z"}}]},
        ],
    ),
]
