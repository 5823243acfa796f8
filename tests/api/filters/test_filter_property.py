"""The filter language in SQL admits exactly what a plain Python reading of it admits."""

import random
from datetime import timedelta
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
from tests.support.random_filters import DAY0, random_filter, random_metadata

MODELS = {"episode": Episode, "fact": Fact, "rule": Rule}


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
