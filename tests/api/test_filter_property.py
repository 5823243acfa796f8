"""The filter language in SQL admits exactly what a plain Python reading of it admits."""

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.rls import SYSTEM_SETTING
from app.models import Episode, Fact, Rule
from app.repositories.memory_filters import compile_filter, filter_values
from app.schemas.filters import FilterError, parse_filter
from tests.support.filter_eval import admits

MODELS = {"episode": Episode, "fact": Fact, "rule": Rule}
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


async def store_memories(client: httpx.AsyncClient, rng: random.Random) -> list[dict[str, Any]]:
    """Episodes, facts and rules with random metadata and fields; each as the API shows it."""
    episodes = [
        {
            "content": f"turn {n}",
            "butler": rng.choice(["planner", "critic"]),
            "session_id": rng.choice(["s1", "s2", None]),
            "importance": rng.choice([1, 3, 5, 7, 9]),
            "occurred_at": (DAY0 + timedelta(days=rng.randint(0, 10))).isoformat(),
            "metadata": random_metadata(rng),
        }
        for n in range(40)
    ]
    response = await client.post("/v1/episodes/batch", json={"items": episodes})
    assert response.status_code == 201, response.text
    stored = [{**item, "memory_type": "episode"} for item in response.json()["items"]]
    for n in range(25):
        fact = {
            "subject": rng.choice(["Ann", "Bob"]),
            "predicate": f"p{n}",
            "content": f"fact {n}",
            "importance": rng.choice([1, 5, 9]),
            "permanence": rng.choice(["standard", "stable", "volatile"]),
            "scope": rng.choice(["global", "planner", "critic"]),
            "tags": rng.sample(["work", "home", "urgent"], rng.randint(0, 2)),
            "metadata": random_metadata(rng),
        }
        if rng.random() < 0.5:
            fact["source_butler"] = rng.choice(["planner", "critic"])
        response = await client.post("/v1/facts", json=fact)
        assert response.status_code == 201, response.text
        stored.append({**response.json(), "memory_type": "fact"})
    for n in range(15):
        rule = {
            "content": f"rule {n}",
            "scope": rng.choice(["global", "planner"]),
            "tags": rng.sample(["work", "home", "urgent"], rng.randint(0, 2)),
            "metadata": random_metadata(rng),
        }
        response = await client.post("/v1/rules", json=rule)
        assert response.status_code == 201, response.text
        stored.append({**response.json(), "memory_type": "rule"})
    return stored


async def admitted_in_sql(engine: AsyncEngine, tree: Any) -> set[str]:
    found: set[str] = set()
    async with engine.begin() as conn:
        await conn.execute(text("SELECT set_config(:name, 'on', true)"), {"name": SYSTEM_SETTING})
        for memory_type, model in MODELS.items():
            stmt = select(model.id).where(
                model.tenant_id == "default", *compile_filter(memory_type, tree)
            )
            rows = await conn.execute(stmt, filter_values(tree))
            found |= {str(row[0]) for row in rows}
    return found


async def test_sql_admits_what_the_python_reading_admits(
    client: httpx.AsyncClient, db_engine: AsyncEngine
) -> None:
    rng = random.Random(20261126)
    memories = await store_memories(client, rng)
    admitted_somewhere = 0
    for number in range(1200):
        raw = random_filter(rng)
        tree = parse_filter(raw)
        expected = {m["id"] for m in memories if admits(tree, m)}
        assert await admitted_in_sql(db_engine, tree) == expected, (number, raw)
        admitted_somewhere += 0 < len(expected) < len(memories)
    # The filters are not all trivially true or false.
    assert admitted_somewhere > 600


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"importance": {"$gt": "high"}}, "filter.importance.$gt"),
        (
            {"$or": [{"tags": "a"}, {"created_at": {"$gte": "yesterday"}}]},
            "filter.$or[1].created_at.$gte",
        ),
        ({"metadata.topic": {"$between": [1, 2]}}, "filter.metadata.topic.$between"),
        ({"colour": "red"}, "filter.colour"),
        ({"metadata.a": {"$in": []}}, "filter.metadata.a.$in"),
        ({"metadata.a": {"$gt": True}}, "filter.metadata.a.$gt"),
        ({"$nor": [{"butler": "a"}]}, "filter.$nor"),
        ({"metadata.a": None}, "filter.metadata.a.$eq"),
        ({"tags": {"$lt": "b"}}, "filter.tags.$lt"),
        ({"metadata.": 1}, "filter.metadata."),
    ],
)
def test_a_malformed_filter_names_its_path_and_operator(raw: Any, named: str) -> None:
    with pytest.raises(FilterError) as raised:
        parse_filter(raw)
    assert str(raised.value).startswith(named + ":")


def test_filters_are_bounded_in_depth_and_size() -> None:
    deep: dict[str, Any] = {"butler": "a"}
    for _ in range(6):
        deep = {"$not": deep}
    with pytest.raises(FilterError, match="nest at most"):
        parse_filter(deep)
    with pytest.raises(FilterError, match="at most 64 conditions"):
        parse_filter({"$or": [{"butler": str(n)} for n in range(65)]})
