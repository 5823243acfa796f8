"""The list bounds OpenAPI states are the ones enforced: one past the bound is a 422 naming
the field, and the bound in the document is the constant the validator uses."""

from collections.abc import Callable
from typing import Any

import pytest

from app.schemas.common import MAX_TAGS
from app.schemas.ledger import MAX_BASED_ON
from app.schemas.procedures import MAX_STEPS
from app.schemas.runs import MAX_MESSAGES
from tests.support.http import post

UUID = "00000000-0000-4000-8000-000000000001"


def _many(count: int, item: Callable[[int], Any]) -> list[Any]:
    return [item(index) for index in range(count)]


# schema, property, enforced bound (None: the instance's settings), method, path, body, field
CASES: list[tuple[str, str, int | None, str, Callable[[int], dict[str, Any]], str]] = [
    (
        "EpisodeBatchCreate",
        "items",
        None,
        "/v1/episodes/batch",
        lambda n: {"items": _many(n, lambda i: {"content": f"e{i}", "butler": "chat"})},
        "items",
    ),
    (
        "MessageBatchCreate",
        "items",
        MAX_MESSAGES,
        "/v1/runs/{run_id}/messages/batch",
        lambda n: {"items": _many(n, lambda i: {"role": "human", "content": f"m{i}"})},
        "body.items",
    ),
    (
        "ProcedureCreate",
        "steps",
        MAX_STEPS,
        "/v1/procedures",
        lambda n: {
            "agent_id": "a",
            "name": "long",
            "steps": _many(n, lambda i: {"step": i + 1, "action": "act"}),
        },
        "body.steps",
    ),
    (
        "FactCreate",
        "tags",
        MAX_TAGS,
        "/v1/facts",
        lambda n: {
            "subject": "Ann",
            "predicate": "likes",
            "content": "tea",
            "tags": _many(n, lambda i: f"t{i}"),
        },
        "body.tags",
    ),
    (
        "ReflectionCreate",
        "based_on",
        MAX_BASED_ON,
        "/v1/ledgers/town/agents/alice/reflections",
        lambda n: {"belief": "b", "based_on": _many(n, lambda i: UUID)},
        "body.based_on",
    ),
]


def _max_items(schema: dict[str, Any]) -> int:
    options = schema.get("anyOf", [schema])
    return next(option["maxItems"] for option in options if option.get("type") == "array")


@pytest.mark.parametrize(
    ("schema", "prop", "bound", "path", "body", "field"), CASES, ids=[case[0] for case in CASES]
)
async def test_schema_bound_is_the_enforced_one(
    client, settings, schema, prop, bound, path, body, field
):
    bound = settings.max_batch_size if bound is None else bound
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    assert _max_items(schemas[schema]["properties"][prop]) == bound

    if "{run_id}" in path:
        path = path.format(run_id=(await post(client, "/v1/runs", task_id="limits"))["id"])
    response = await client.post(path, json=body(bound + 1))
    assert response.status_code == 422, response.text
    assert field in [error["field"] for error in response.json()["errors"]]
