"""Parsing the model's consolidation output; malformed data lands in parse_errors, never raises."""

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, get_args

from app.schemas.common import Permanence

NO_JSON_ERROR = "No JSON block found in consolidation output"
DEFAULT_PERMANENCE: Permanence = "standard"
DEFAULT_IMPORTANCE = 5.0
MIN_IMPORTANCE = 1.0
MAX_IMPORTANCE = 10.0

_FENCED = re.compile(r"```(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


@dataclass
class NewFact:
    subject: str
    predicate: str
    content: str
    permanence: Permanence = DEFAULT_PERMANENCE
    importance: float = DEFAULT_IMPORTANCE
    tags: list[str] = field(default_factory=list)
    source_episode_ids: list[uuid.UUID] = field(default_factory=list)
    valid_from: datetime | None = None  # when the episodes say the fact started to hold
    valid_until: datetime | None = None


@dataclass
class UpdatedFact(NewFact):
    target_id: uuid.UUID = field(default_factory=uuid.uuid4)


@dataclass
class NewRule:
    content: str
    tags: list[str] = field(default_factory=list)
    source_episode_ids: list[uuid.UUID] = field(default_factory=list)


@dataclass
class ProcedureStepItem:
    action: str
    params_template: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)


@dataclass
class NewProcedure:
    """A procedure the model proposes; it is stored as a draft."""

    name: str
    steps: list[ProcedureStepItem]
    description: str = ""
    preconditions: dict[str, Any] = field(default_factory=dict)
    postconditions: dict[str, Any] = field(default_factory=dict)
    source_episode_ids: list[uuid.UUID] = field(default_factory=list)


@dataclass
class ConsolidationResult:
    new_facts: list[NewFact] = field(default_factory=list)
    updated_facts: list[UpdatedFact] = field(default_factory=list)
    new_rules: list[NewRule] = field(default_factory=list)
    procedures: list[NewProcedure] = field(default_factory=list)
    confirmations: list[uuid.UUID] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    # Where each kept action stood in the answer's list of its kind: entries that could not
    # be read are dropped, so a kept action's place may differ from the answer's.
    places: dict[str, list[int]] = field(default_factory=dict)

    def place(self, key: str, kept: int) -> int:
        """The index in the answer's `key` list of the `kept`-th action read from it."""
        places = self.places.get(key, [])
        return places[kept] if kept < len(places) else kept


def parse_consolidation_output(output: str | None) -> ConsolidationResult:
    """Extract the JSON block (fenced first, else outermost balanced braces) and validate it."""
    result = ConsolidationResult()
    block = extract_json_block(output or "")
    if block is None:
        result.parse_errors.append(NO_JSON_ERROR)
        return result
    try:
        data = json.loads(block)
    except json.JSONDecodeError as exc:
        result.parse_errors.append(f"Invalid JSON in consolidation output: {exc}")
        return result
    if not isinstance(data, dict):
        result.parse_errors.append("Consolidation output JSON is not an object")
        return result
    readers: tuple[tuple[str, Callable[[Any, str, list[str]], Any], list[Any]], ...] = (
        ("new_facts", _new_fact, result.new_facts),
        ("updated_facts", _updated_fact, result.updated_facts),
        ("new_rules", _new_rule, result.new_rules),
        ("procedures", _new_procedure, result.procedures),
    )
    for key, read, kept in readers:
        for index, item in enumerate(_entries(data, key, result)):
            entry = read(item, f"{key}[{index}]", result.parse_errors)
            if entry is not None:
                kept.append(entry)
                result.places.setdefault(key, []).append(index)
    for index, item in enumerate(_entries(data, "confirmations", result)):
        memory_id = _uuid(item)
        if memory_id is None:
            result.parse_errors.append(f"confirmations[{index}]: not a valid UUID: {item!r:.80}")
        else:
            result.confirmations.append(memory_id)
            result.places.setdefault("confirmations", []).append(index)
    return result


def extract_json_block(output: str) -> str | None:
    """The text of a ```json fenced block holding an object, else the outermost {...} span."""
    for match in _FENCED.finditer(output):
        candidate = match.group(1).strip()
        if candidate.startswith("{"):
            return candidate
    return _balanced_object(output)


def _balanced_object(text: str) -> str | None:
    start = text.find("{")
    while start != -1:
        end = _matching_brace(text, start)
        if end is not None:
            return text[start : end + 1]
        start = text.find("{", start + 1)
    return None


def _matching_brace(text: str, start: int) -> int | None:
    depth, in_string, escaped = 0, False, False
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position
    return None


def _entries(data: dict[str, Any], key: str, result: ConsolidationResult) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        result.parse_errors.append(f"{key}: expected a list, got {type(value).__name__}")
        return []
    return value


def _text(item: dict[str, Any], key: str) -> str | None:
    value = item.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _uuid(value: Any) -> uuid.UUID | None:
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        return None


def _missing(item: dict[str, Any], keys: tuple[str, ...]) -> list[str]:
    return [key for key in keys if _text(item, key) is None]


def _new_fact(item: Any, where: str, errors: list[str]) -> NewFact | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: expected an object")
        return None
    missing = _missing(item, ("subject", "predicate", "content"))
    if missing:
        errors.append(f"{where}: missing or empty {', '.join(missing)}")
        return None
    return NewFact(
        subject=str(_text(item, "subject")),
        predicate=str(_text(item, "predicate")),
        content=str(_text(item, "content")),
        permanence=_permanence(item.get("permanence")),
        importance=_importance(item.get("importance")),
        tags=_tags(item.get("tags")),
        source_episode_ids=_source_ids(item.get("source_episode_ids"), where, errors),
        valid_from=_time(item.get("valid_from"), f"{where}.valid_from", errors),
        valid_until=_time(item.get("valid_until"), f"{where}.valid_until", errors),
    )


def _time(value: Any, where: str, errors: list[str]) -> datetime | None:
    """An ISO 8601 time with a time zone (a date alone: its midnight UTC); None otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    errors.append(f"{where}: not an ISO 8601 time: {value!r:.80}")
    return None


def _updated_fact(item: Any, where: str, errors: list[str]) -> UpdatedFact | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: expected an object")
        return None
    missing = _missing(item, ("target_id", "subject", "predicate", "content"))
    if missing:
        errors.append(f"{where}: missing or empty {', '.join(missing)}")
        return None
    target_id = _uuid(item["target_id"])
    if target_id is None:
        errors.append(f"{where}: target_id is not a valid UUID: {item['target_id']!r:.80}")
        return None
    fact = _new_fact(item, where, errors)
    if fact is None:
        return None
    return UpdatedFact(**vars(fact), target_id=target_id)


def _new_rule(item: Any, where: str, errors: list[str]) -> NewRule | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: expected an object")
        return None
    content = _text(item, "content")
    if content is None:
        errors.append(f"{where}: missing or empty content")
        return None
    return NewRule(
        content=content,
        tags=_tags(item.get("tags")),
        source_episode_ids=_source_ids(item.get("source_episode_ids"), where, errors),
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _step(item: Any) -> ProcedureStepItem | None:
    if isinstance(item, str) and item.strip():
        return ProcedureStepItem(action=item.strip())
    if not isinstance(item, dict) or _text(item, "action") is None:
        return None
    return ProcedureStepItem(
        action=str(_text(item, "action")),
        params_template=_object(item.get("params_template")),
        conditions=_object(item.get("conditions")),
    )


def _new_procedure(item: Any, where: str, errors: list[str]) -> NewProcedure | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: expected an object")
        return None
    name = _text(item, "name")
    raw_steps = item.get("steps")
    if name is None or not isinstance(raw_steps, list) or not raw_steps:
        errors.append(f"{where}: needs a name and a non-empty list of steps")
        return None
    steps = [_step(raw) for raw in raw_steps]
    if any(step is None for step in steps):
        errors.append(f"{where}: every step needs an action")
        return None
    return NewProcedure(
        name=name,
        steps=[step for step in steps if step is not None],
        description=_text(item, "description") or "",
        preconditions=_object(item.get("preconditions")),
        postconditions=_object(item.get("postconditions")),
        source_episode_ids=_source_ids(item.get("source_episode_ids"), where, errors),
    )


def _permanence(value: Any) -> Permanence:
    levels: tuple[Permanence, ...] = get_args(Permanence)
    return next((level for level in levels if level == value), DEFAULT_PERMANENCE)


def _importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return DEFAULT_IMPORTANCE
    try:
        number = float(value)
    except ValueError:
        return DEFAULT_IMPORTANCE
    if number != number:  # NaN
        return DEFAULT_IMPORTANCE
    return min(MAX_IMPORTANCE, max(MIN_IMPORTANCE, number))


def _tags(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [tag.strip() for tag in value if isinstance(tag, str) and tag.strip()]


def _source_ids(value: Any, where: str, errors: list[str]) -> list[uuid.UUID]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(f"{where}.source_episode_ids: expected a list")
        return []
    ids: list[uuid.UUID] = []
    for raw in value:
        parsed = _uuid(raw)
        if parsed is None:
            errors.append(f"{where}.source_episode_ids: not a valid UUID: {raw!r:.80}")
        elif parsed not in ids:
            ids.append(parsed)
    return ids
