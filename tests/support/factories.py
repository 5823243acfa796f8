"""Factories that store memories and runs through the API: each asserts the 201, returns the
JSON."""

from typing import Any

from tests.support.http import post


async def store_episode(
    client: Any,
    content: str = "Caroline went to the LGBTQ support group",
    *,
    butler: str = "chat",
    **fields: Any,
) -> dict[str, Any]:
    """Store an episode observed by `butler` and return it."""
    return await post(client, "/v1/episodes", content=content, butler=butler, **fields)


async def store_fact(
    client: Any,
    subject: str = "Caroline",
    predicate: str = "lives_in",
    content: str = "Caroline lives in Boston",
    **fields: Any,
) -> dict[str, Any]:
    """Store a fact (superseding the active one with the same key) and return it."""
    return await post(
        client, "/v1/facts", subject=subject, predicate=predicate, content=content, **fields
    )


async def store_rule(
    client: Any, content: str = "Answer in the user's language", **fields: Any
) -> dict[str, Any]:
    """Store a rule and return it."""
    return await post(client, "/v1/rules", content=content, **fields)


async def create_entity(
    client: Any, name: str = "Caroline", entity_type: str = "person", **fields: Any
) -> dict[str, Any]:
    """Create an entity and return it."""
    return await post(
        client, "/v1/entities", canonical_name=name, entity_type=entity_type, **fields
    )


async def create_run(client: Any, task_id: str = "t-parse", **fields: Any) -> dict[str, Any]:
    """Record a task run and return it."""
    return await post(client, "/v1/runs", task_id=task_id, **fields)


async def harmful(
    client: Any, rule_id: str, reason: str | None = None, times: int = 1
) -> dict[str, Any]:
    """Mark a rule harmful `times` times (each asserting the 200); the rule as last returned."""
    body = {"reason": reason} if reason else None
    for _ in range(times):
        response = await client.post(f"/v1/rules/{rule_id}/harmful", json=body)
        assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def ref(memory_type: str, stored: dict[str, Any]) -> tuple[str, str]:
    """The (type, id) pair naming a stored memory, as the link and graph tests use it."""
    return memory_type, stored["id"]
