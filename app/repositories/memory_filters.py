"""A filter tree (app/schemas/filters.py) compiled to a WHERE clause of one memory table, or
of the table of one list of records (entities, runs, procedures, arcs, links).

Every value is a named bound parameter (`filter_values` gives them), and the SQL depends only
on the tree's shape (`filter_shape`), so a search statement built once per shape serves every
filter of that shape. Each condition yields a definite true or false (never NULL), so `$not`
negates exactly what the condition admits.
"""

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Float,
    Text,
    and_,
    bindparam,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    literal_column,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TIMESTAMP, UUID
from sqlalchemy.sql.functions import Function

from app.models import Arc, Entity, Episode, Fact, MemoryLink, Procedure, Rule, Run
from app.repositories.filters import uuid_or_none
from app.schemas.filters import COMPARISONS, AllOf, Condition, MemoryFilter, Not

PARAM_PREFIX = "filter_"

# The column behind each first-class field, per memory type; a field a type lacks is missing.
_COLUMNS: dict[str, dict[str, Any]] = {
    # An episode's session is the one given, else the one inferred for it (its UUID).
    "episode": {
        "butler": Episode.butler,
        "session_id": func.coalesce(Episode.session_id, cast(Episode.inferred_session, Text)),
        "importance": Episode.importance,
        "created_at": Episode.created_at,
        "occurred_at": Episode.occurred_at,
        "expires_at": Episode.expires_at,
        "metadata": Episode.metadata_,
    },
    "fact": {
        "butler": Fact.source_butler,
        "scope": Fact.scope,
        "subject": Fact.subject,
        "predicate": Fact.predicate,
        "permanence": Fact.permanence,
        "validity": Fact.validity,
        "importance": Fact.importance,
        "confidence": Fact.confidence,
        "tags": Fact.tags,
        "created_at": Fact.created_at,
        "valid_from": Fact.valid_from,
        "valid_until": Fact.valid_until,
        "last_confirmed_at": Fact.last_confirmed_at,
        "metadata": Fact.metadata_,
    },
    "rule": {
        "butler": Rule.source_butler,
        "scope": Rule.scope,
        "permanence": Rule.permanence,
        "maturity": Rule.maturity,
        "confidence": Rule.confidence,
        "tags": Rule.tags,
        "created_at": Rule.created_at,
        "last_confirmed_at": Rule.last_confirmed_at,
        "metadata": Rule.metadata_,
    },
}
# The same for the lists of other records, whose filters name only these fields
# (app/schemas/filters.RECORD_FIELDS); a run's metadata is its `meta`, an entity's aliases
# (text[]) read as a JSON array, like tags.
RECORD_COLUMNS: dict[str, dict[str, Any]] = {
    "entity": {
        "metadata": Entity.metadata_,
        "entity_type": Entity.entity_type,
        "canonical_name": Entity.canonical_name,
        "aliases": func.to_jsonb(Entity.aliases),
        "created_at": Entity.created_at,
        "updated_at": Entity.updated_at,
    },
    "run": {
        "metadata": Run.meta,
        "task_id": Run.task_id,
        "agent_version": Run.agent_version,
        "task_version": Run.task_version,
        "rubric_version": Run.rubric_version,
        "score_numeric": Run.score_numeric,
        "started_at": Run.started_at,
        "finished_at": Run.finished_at,
        "created_at": Run.created_at,
    },
    "procedure": {
        "agent_id": Procedure.agent_id,
        "name": Procedure.name,
        "status": Procedure.status,
        "version": Procedure.version,
        "execution_count": Procedure.execution_count,
        "success_rate": Procedure.success_rate,
        "last_executed_at": Procedure.last_executed_at,
        "created_at": Procedure.created_at,
        "updated_at": Procedure.updated_at,
    },
    "arc": {
        "scope": Arc.scope,
        "arc_type": Arc.arc_type,
        "status": Arc.status,
        "title": Arc.title,
        "outcome": Arc.outcome,
        "started_at": Arc.started_at,
        "ended_at": Arc.ended_at,
        "created_at": Arc.created_at,
        "updated_at": Arc.updated_at,
    },
    "link": {
        "relation": MemoryLink.relation,
        "source_type": MemoryLink.source_type,
        "target_type": MemoryLink.target_type,
        "strength": MemoryLink.strength,
        "reasoning": MemoryLink.reasoning,
        "created_by": MemoryLink.created_by,
        "created_at": MemoryLink.created_at,
    },
}
_TABLE_COLUMNS = {**_COLUMNS, **RECORD_COLUMNS}
TIMESTAMPTZ = TIMESTAMP(timezone=True)


def filter_shape(tree: MemoryFilter | None) -> Any:
    """A hashable description of the SQL `tree` compiles to (its values left out)."""
    if tree is None:
        return None
    if isinstance(tree, Condition):
        return (tree.field, tree.path, tree.op, _value_kind(tree.value))
    if isinstance(tree, Not):
        return ("not", filter_shape(tree.part))
    return (
        "and" if isinstance(tree, AllOf) else "or",
        tuple(filter_shape(part) for part in tree.parts),
    )


def _value_kind(value: Any) -> Any:
    if isinstance(value, tuple):
        return "list"
    return type(value).__name__


def filter_values(tree: MemoryFilter | None) -> dict[str, Any]:
    """The bound parameters of `tree`'s clause, by name."""
    values: dict[str, Any] = {}
    for number, condition in enumerate(_conditions(tree)):
        name = f"{PARAM_PREFIX}{number}"
        values[name] = _bound_value(condition)
        if _indexed_equality(condition):
            values.update(_containments(name, condition))
        if _session_equality(condition):
            values[f"{name}_inferred"] = _session_uuids(condition.value)
    return values


def _session_equality(condition: Condition) -> bool:
    """An `$eq` or `$in` on an episode's session, which its two indexes can narrow down."""
    return condition.field == "session_id" and condition.op in ("$eq", "$in")


def _session_uuids(value: Any) -> list[str]:
    """Those of the wanted sessions that can be an inferred session's id (UUIDs)."""
    wanted = value if isinstance(value, tuple) else (value,)
    return [str(found) for one in wanted if (found := uuid_or_none(one)) is not None]


def _indexed_equality(condition: Condition) -> bool:
    """An `$eq` the table's GIN index can narrow down (metadata, tags)."""
    return condition.op == "$eq" and condition.kind in ("json", "tags")


def _containments(name: str, condition: Condition) -> dict[str, str]:
    """The two documents one of which the column contains when the `$eq` holds: the value
    at the path, or an array holding it."""

    def nested(leaf: Any) -> str:
        document = leaf
        for key in reversed(condition.path):
            document = {key: document}
        return json.dumps(document)

    return {f"{name}_scalar": nested(condition.value), f"{name}_array": nested([condition.value])}


def _conditions(tree: MemoryFilter | None) -> list[Condition]:
    """The tree's conditions in the order their parameters are numbered."""
    if tree is None:
        return []
    if isinstance(tree, Condition):
        return [tree]
    if isinstance(tree, Not):
        return _conditions(tree.part)
    return [condition for part in tree.parts for condition in _conditions(part)]


def _bound_value(condition: Condition) -> Any:
    """What the condition's parameter carries: JSON text for metadata and tags, else the
    value (a list for $in / $nin)."""
    value = condition.value
    if condition.op == "$exists":
        return None
    if condition.kind in ("json", "tags"):
        return json.dumps(list(value) if isinstance(value, tuple) else value)
    return list(value) if isinstance(value, tuple) else value


def compile_filter(memory_type: str, tree: MemoryFilter | None) -> list[ColumnElement[bool]]:
    """The WHERE clauses of `tree` on `memory_type`'s table (none without a filter); a
    record type (`entity`, `run`, `procedure`, `arc`, `link`) for the lists of those records."""
    if tree is None:
        return []
    compiler = _Compiler(memory_type)
    return [compiler.node(tree)]


@dataclass
class _Compiler:
    memory_type: str
    number: int = 0

    def node(self, tree: MemoryFilter) -> ColumnElement[bool]:
        if isinstance(tree, Condition):
            return self.condition(tree)
        if isinstance(tree, Not):
            return not_(self.node(tree.part))
        parts = [self.node(part) for part in tree.parts]
        return and_(*parts) if isinstance(tree, AllOf) else or_(*parts)

    def condition(self, condition: Condition) -> ColumnElement[bool]:
        name = f"{PARAM_PREFIX}{self.number}"
        self.number += 1
        column = _TABLE_COLUMNS[self.memory_type].get(condition.field)
        if condition.field == "memory_type":
            if condition.op == "$exists":
                return true() if condition.value else false()
            value = literal(self.memory_type, Text)
            return _scalar_condition(value, condition, _param(name, condition))
        if column is None:
            return _missing(condition)
        if condition.kind in ("json", "tags"):
            value = (
                column.op("#>", return_type=JSONB)(literal(list(condition.path), ARRAY(Text)))
                if condition.kind == "json"
                else column
            )
            clause = _json_condition(value, condition, name)
            if _indexed_equality(condition):
                # Implied by the equality; lets the planner narrow rows by the GIN index.
                contained = [
                    column.op("@>")(cast(bindparam(key, document, type_=Text), JSONB))
                    for key, document in _containments(name, condition).items()
                ]
                clause = and_(or_(*contained), clause)
            return clause
        if condition.op == "$exists":
            present: ColumnElement[bool] = column.is_not(None)
            return present if condition.value else not_(present)
        value = _param(name, condition)
        clause = _scalar_condition(column, condition, value)
        if self.memory_type == "episode" and _session_equality(condition):
            # Implied by the equality, in comparisons row-level security lets the planner
            # answer from the session_id and inferred_session indexes.
            inferred = bindparam(
                f"{name}_inferred",
                _session_uuids(condition.value),
                type_=ARRAY(UUID(as_uuid=False)),
            )
            given = Episode.session_id == (value if condition.op == "$eq" else func.any(value))
            clause = and_(or_(given, Episode.inferred_session == func.any(inferred)), clause)
        return clause


def _param(name: str, condition: Condition) -> BindParameter[Any]:
    kind = condition.kind
    type_: Any = Float if kind == "number" else TIMESTAMPTZ if kind == "time" else Text
    if condition.op in ("$in", "$nin"):
        type_ = ARRAY(type_)
    return bindparam(name, _bound_value(condition), type_=type_)


def _missing(condition: Condition) -> ColumnElement[bool]:
    """A condition on a field the memory type does not have."""
    admits = condition.op in ("$ne", "$nin") or (condition.op == "$exists" and not condition.value)
    return true() if admits else false()


def _definite(clause: ColumnElement[bool]) -> ColumnElement[bool]:
    """`clause`, with NULL (a missing value) read as false."""
    return func.coalesce(clause, false())


def _scalar_condition(
    column: Any, condition: Condition, value: BindParameter[Any]
) -> ColumnElement[bool]:
    """A condition on a text, number or time column (NULL: missing)."""
    op = condition.op
    if op in ("$eq", "$ne"):
        equal = _definite(column == value)
        return equal if op == "$eq" else not_(equal)
    if op in ("$in", "$nin"):
        member = _definite(column == func.any(value))
        return member if op == "$in" else not_(member)
    if op == "$contains":
        return _definite(func.strpos(column, value) > 0)
    if condition.kind == "text":
        column = column.collate("C")
    return _definite(_compare(op, column, value))


def _compare(op: str, left: Any, right: Any) -> ColumnElement[bool]:
    assert op in COMPARISONS
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right


def _typeof(value: Any) -> Function[Any]:
    return func.jsonb_typeof(value)


def _json_condition(value: Any, condition: Condition, name: str) -> ColumnElement[bool]:
    """A condition on a JSON value (a metadata path, or the tags array)."""
    op = condition.op
    if op == "$exists":
        present = _definite(_typeof(value) != "null")
        return present if condition.value else not_(present)
    operand = cast(bindparam(name, _bound_value(condition), type_=Text), JSONB)
    if op in ("$eq", "$ne"):
        equal = _definite(_equals(value, operand))
        return equal if op == "$eq" else not_(equal)
    if op in ("$in", "$nin"):
        item = func.jsonb_array_elements(operand).table_valued("value").alias("filter_value")
        member = _definite(
            exists(select(literal(1)).select_from(item).where(_equals(value, item.c.value)))
        )
        return member if op == "$in" else not_(member)
    if op == "$contains":
        substring = func.strpos(_text(value), _text(operand)) > 0
        return _definite(
            case((_typeof(value) == "string", substring), else_=_holds(value, operand))
        )
    # $gt $gte $lt $lte: numbers compare as jsonb (by value), strings by code point.
    by_number = and_(
        _typeof(value) == "number", _typeof(operand) == "number", _compare(op, value, operand)
    )
    by_string = and_(
        _typeof(value) == "string",
        _typeof(operand) == "string",
        _compare(op, _text(value).collate("C"), _text(operand).collate("C")),
    )
    return _definite(or_(by_number, by_string))


def _text(value: Any) -> Any:
    """A JSON scalar as text (a string without its quotes)."""
    return value.op("#>>", return_type=Text)(literal([], ARRAY(Text)))


def _equals(value: Any, scalar: Any) -> ColumnElement[bool]:
    """`value` equals the JSON scalar, or is an array holding an element equal to it."""
    return case((_typeof(value) == "array", _holds(value, scalar)), else_=value == scalar)


def _holds(value: Any, element: Any) -> ColumnElement[bool]:
    """`value` is an array with an element equal to `element`."""
    elements = (
        func.jsonb_array_elements(
            case((_typeof(value) == "array", value), else_=literal_column("'[]'::jsonb"))
        )
        .table_valued("value")
        .alias("filter_element")
    )
    return exists(select(literal(1)).select_from(elements).where(elements.c.value == element))
