"""The filter of the entities' list in SQL admits exactly what the plain Python reading of
the language admits (tests/support/filter_eval.py), over random entities and filters."""

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.core.rls import SYSTEM_SETTING
from app.models import Entity
from app.repositories.memory_filters import RECORD_COLUMNS, compile_filter, filter_values
from app.schemas.filters import FIELDS, RECORD_FIELDS, parse_filter
from tests.support.filter_eval import admits
from tests.support.random_filters import WORDS, random_filter, random_metadata

NAMES = ["Ann", "Anna", "Bob", "bob", "Zoë"]
ALIASES = ["a", "ann", "boss", "Boss", "zed"]

OPERANDS: dict[str, Any] = {
    "metadata.a": lambda rng: rng.choice(WORDS + [0, 1, 2.5, -3, True, False]),
    "metadata.b": lambda rng: rng.choice(WORDS + [0, 2, 10, True]),
    "metadata.c.x": lambda rng: rng.choice(WORDS + [1, 2]),
    "entity_type": lambda rng: rng.choice(["person", "place", "other", "per"]),
    "canonical_name": lambda rng: rng.choice(NAMES + ["An", "Bo"]),
    "aliases": lambda rng: rng.choice(ALIASES + ["bos"]),
    "created_at": lambda rng: (datetime.now(UTC) + timedelta(days=rng.choice([-2, 2]))).isoformat(),
}
ORDERED = {
    "metadata.a",
    "metadata.b",
    "metadata.c.x",
    "canonical_name",
    "entity_type",
    "created_at",
}
TEXTUAL = {"metadata.a", "metadata.b", "metadata.c.x", "canonical_name", "entity_type", "aliases"}


def random_condition(rng: random.Random) -> dict[str, Any]:
    field = rng.choice(list(OPERANDS))
    ops = ["$eq", "$ne", "$in", "$nin", "$exists"]
    ops += ["$gt", "$gte", "$lt", "$lte"] if field in ORDERED else []
    ops += ["$contains"] if field in TEXTUAL else []
    op = rng.choice(ops)
    if op == "$exists":
        value: Any = rng.choice([True, False])
    elif op in ("$in", "$nin"):
        value = [OPERANDS[field](rng) for _ in range(rng.randint(1, 3))]
    elif op == "$contains":
        value = rng.choice(["a", "n", "Bo", "o", "", "ss", "re"])
    else:
        value = OPERANDS[field](rng)
        if op.startswith(("$g", "$l")) and isinstance(value, bool):
            value = 1
    return {field: value} if op == "$eq" and rng.random() < 0.5 else {field: {op: value}}


async def admitted_in_sql(engine: AsyncEngine, tree: Any) -> set[str]:
    async with engine.begin() as conn:
        await conn.execute(text("SELECT set_config(:name, 'on', true)"), {"name": SYSTEM_SETTING})
        stmt = select(Entity.id).where(
            Entity.tenant_id == "default", *compile_filter("entity", tree)
        )
        rows = await conn.execute(stmt, filter_values(tree))
        return {str(row[0]) for row in rows}


async def test_the_entity_lists_sql_admits_what_the_python_reading_admits(
    client: httpx.AsyncClient, db_engine: AsyncEngine
) -> None:
    rng = random.Random(20261126)
    stored = []
    for n in range(30):
        response = await client.post(
            "/v1/entities",
            json={
                "canonical_name": NAMES[n] if n < len(NAMES) else f"{rng.choice(NAMES)} {n}",
                "entity_type": rng.choice(["person", "place", "other"]),
                "aliases": rng.sample(ALIASES, rng.randint(0, 3)),
                "metadata": random_metadata(rng),
            },
        )
        assert response.status_code == 201, response.text
        stored.append({**response.json(), "memory_type": "entity"})
    assert len(stored) == 30
    admitted_somewhere = 0
    for number in range(400):
        raw = random_filter(rng, condition=random_condition)
        tree = parse_filter(raw, "entity")
        expected = {e["id"] for e in stored if admits(tree, e)}
        assert await admitted_in_sql(db_engine, tree) == expected, (number, raw)
        admitted_somewhere += 0 < len(expected) < len(stored)
    # The filters are not all trivially true or false.
    assert admitted_somewhere > 150


def test_each_list_compiles_exactly_the_fields_it_accepts() -> None:
    for record_type, fields in RECORD_FIELDS.items():
        assert set(RECORD_COLUMNS[record_type]) == set(fields), record_type
        for field, kind in fields.items():
            if field == "metadata":
                continue
            assert kind != "type"
            # A name shared with the memories' fields holds the same kind of value.
            assert FIELDS.get(field, kind) == kind, field
            # Every accepted field parses and compiles for its own list.
            operand = "2024-05-01T00:00:00Z" if kind == "time" else 1 if kind == "number" else "x"
            [clause] = compile_filter(record_type, parse_filter({field: operand}, record_type))
            assert str(clause), field
