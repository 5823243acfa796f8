"""Random filters of the filter language and random metadata for them to read, for the
property tests that compare the SQL with the Python reading (tests/support/filter_eval.py)."""

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

WORDS = ["red", "Red", "re", "blue", "", "b", "zed", "été"]
NUMBERS = [0, 1, 2, 2.5, -3, 10]
DAY0 = datetime(2024, 5, 1, tzinfo=UTC)


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """A metadata value: mostly scalars, some lists, nulls and (shallow) objects."""
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(WORDS)
    if roll < 0.55:
        return rng.choice(NUMBERS)
    if roll < 0.65:
        return rng.choice([True, False])
    if roll < 0.72:
        return None
    if roll < 0.88:
        return [rng.choice(WORDS + NUMBERS + [True]) for _ in range(rng.randint(0, 3))]
    if depth == 0:
        return {key: random_json(rng, 1) for key in rng.sample(["x", "y"], rng.randint(1, 2))}
    return rng.choice(WORDS)


def random_metadata(rng: random.Random) -> dict[str, Any]:
    """Metadata of up to three keys (a, b, c) with random values."""
    return {key: random_json(rng) for key in ["a", "b", "c"] if rng.random() < 0.75}


FIELD_OPERANDS: dict[str, Any] = {
    "metadata.a": lambda rng: rng.choice(WORDS + NUMBERS + [True, False]),
    "metadata.b": lambda rng: rng.choice(WORDS + NUMBERS + [True]),
    "metadata.c.x": lambda rng: rng.choice(WORDS + NUMBERS),
    "metadata.nothing": lambda rng: rng.choice(WORDS),
    "butler": lambda rng: rng.choice(["planner", "critic", "zed"]),
    "session_id": lambda rng: rng.choice(["s1", "s2", "s"]),
    "scope": lambda rng: rng.choice(["global", "planner", "critic"]),
    "subject": lambda rng: rng.choice(["Ann", "Bob", "A"]),
    "permanence": lambda rng: rng.choice(["standard", "stable", "volatile"]),
    "maturity": lambda rng: rng.choice(["candidate", "proven"]),
    "importance": lambda rng: rng.choice([1, 3, 5, 7, 9, 4.5]),
    "confidence": lambda rng: rng.choice([0.5, 1, 0.9]),
    "tags": lambda rng: rng.choice(["work", "home", "urgent", "wor"]),
    "memory_type": lambda rng: rng.choice(["episode", "fact", "rule"]),
    "occurred_at": lambda rng: (DAY0 + timedelta(days=rng.randint(-1, 12), hours=12)).isoformat(),
    "created_at": lambda rng: (datetime.now(UTC) + timedelta(days=rng.choice([-2, 2]))).isoformat(),
}
ORDERED = {
    "metadata.a",
    "metadata.b",
    "metadata.c.x",
    "importance",
    "confidence",
    "occurred_at",
    "created_at",
    "butler",
    "subject",
    "session_id",
}
TEXTUAL = {
    "metadata.a",
    "metadata.b",
    "metadata.c.x",
    "metadata.nothing",
    "butler",
    "session_id",
    "scope",
    "subject",
    "permanence",
    "maturity",
    "tags",
}


def random_condition(rng: random.Random) -> dict[str, Any]:
    """One condition on a memory's field with an operator the field takes."""
    field = rng.choice(list(FIELD_OPERANDS))
    operand = FIELD_OPERANDS[field]
    ops = ["$eq", "$ne", "$in", "$nin", "$exists"]
    if field in ORDERED:
        ops += ["$gt", "$gte", "$lt", "$lte"]
    if field in TEXTUAL:
        ops.append("$contains")
    op = rng.choice(ops)
    if op == "$exists":
        value: Any = rng.choice([True, False])
    elif op in ("$in", "$nin"):
        value = [operand(rng) for _ in range(rng.randint(1, 3))]
    elif op == "$contains":
        value = rng.choice(WORDS[:6] + ["work", "lan"])
    else:
        value = operand(rng)
        if op.startswith(("$g", "$l")) and isinstance(value, bool):
            value = 1
    if op == "$eq" and rng.random() < 0.5:
        return {field: value}
    return {field: {op: value}}


def random_filter(
    rng: random.Random,
    depth: int = 0,
    condition: Callable[[random.Random], dict[str, Any]] = random_condition,
) -> dict[str, Any]:
    """A random tree of `condition`s: negated, merged in one object, or under $and / $or."""
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        return condition(rng)
    if roll < 0.6:
        return {"$not": random_filter(rng, depth + 1, condition)}
    if roll < 0.7:
        merged: dict[str, Any] = {}
        for _ in range(rng.randint(2, 3)):
            merged.update(condition(rng))
        return merged
    combinator = rng.choice(["$and", "$or"])
    return {
        combinator: [random_filter(rng, depth + 1, condition) for _ in range(rng.randint(1, 3))]
    }
