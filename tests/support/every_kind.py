"""A tenant holding every kind of record, stored through the API (and one consolidation)."""

import uuid
from typing import Any

from tests.support.factories import create_entity, store_episode, store_fact, store_rule
from tests.support.http import post
from tests.support.jobs import job_context, run_job
from tests.support.llm_stub import LLMStub

LEDGER = "/v1/ledgers/village"


async def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    result: dict[str, Any] = response.json()
    return result


async def _entities(client: Any, marker: str) -> dict[str, Any]:
    """Three entities related to each other, and a twin merged into the first."""
    ann = await create_entity(client, "Ann Example", metadata={"phone": marker})
    acme = await create_entity(client, "Acme", entity_type="organization")
    bob = await create_entity(client, "Bob Example")
    twin = await create_entity(client, f"Ann at {marker}")
    await _ok(await client.post(f"/v1/entities/{ann['id']}/merge", json={"source_id": twin["id"]}))
    for target, relation in ((acme, "works_at"), (bob, "knows")):
        await post(
            client,
            "/v1/links",
            source_type="entity",
            source_id=ann["id"],
            target_type="entity",
            target_id=target["id"],
            relation=relation,
            strength=0.5,
        )
    return {"ann": ann, "acme": acme, "bob": bob, "twin": twin}


async def _memories(client: Any, marker: str, ann: dict[str, Any]) -> dict[str, Any]:
    """Episodes of a session, a fact in three versions (one about an earlier period, stored
    last), a rule with both kinds of feedback."""
    session_id = str(uuid.uuid4())
    first = await store_episode(client, f"Ann said: call me on {marker}", session_id=session_id)
    second = await store_episode(client, "Ann: I moved to the Acme office", session_id=session_id)
    loose = await store_episode(client, "The weather was fine", butler="diary")
    old = await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        content=f"Ann's phone is {marker}",
        entity_id=ann["id"],
        valid_from="2020-01-01T00:00:00+00:00",
    )
    new = await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        content=f"Ann's mobile is {marker}",
        entity_id=ann["id"],
        source_episode_id=first["id"],
    )
    # Learned last, about the years between: history, with the periods it narrowed.
    await store_fact(
        client,
        subject="Ann",
        predicate="phone",
        entity_id=ann["id"],
        content=f"Ann's work phone was {marker}",
        valid_from="2022-01-01T00:00:00+00:00",
        valid_until="2023-01-01T00:00:00+00:00",
    )
    rule = await store_rule(client, "Read phone numbers back to the user")
    await _ok(await client.post(f"/v1/rules/{rule['id']}/helpful", json={}))
    await _ok(
        await client.post(
            f"/v1/rules/{rule['id']}/harmful", json={"reason": f"it read {marker} out loud"}
        )
    )
    await post(
        client,
        "/v1/links",
        source_type="fact",
        source_id=new["id"],
        target_type="episode",
        target_id=first["id"],
        relation="derived_from",
    )
    return {
        "session_id": session_id,
        "episodes": [first, second, loose],
        "old": old,
        "new": new,
        "rule": rule,
    }


async def _runs(client: Any, marker: str) -> dict[str, Any]:
    """A failed run with messages and critic feedback that became a lesson rule."""
    run = await post(
        client,
        "/v1/runs",
        task_id="invoice-42",
        summary=f"Sent the invoice to {marker}",
        success=False,
    )
    await _ok(
        await client.post(
            f"/v1/runs/{run['id']}/messages/batch",
            json={
                "items": [
                    {"role": "planner", "content": "Find the customer's address"},
                    {"role": "executor", "content": f"Mailed ann@example.com about {marker}"},
                ]
            },
        ),
        201,
    )
    await post(
        client,
        f"/v1/runs/{run['id']}/feedback",
        source="critic",
        rating=0.2,
        rationale="Confirm the address before sending",
    )
    lessons = await _ok(await client.post("/v1/runs/lessons", json={}))
    assert lessons["rules_created"] == 1
    return {"run": run}


async def _ledger(client: Any, marker: str) -> dict[str, Any]:
    """Ledger events and a reflection based on two of them."""
    events = [
        await post(
            client,
            f"{LEDGER}/events",
            agent_id="alice",
            kind="agent.spoke",
            content=text,
            turn=turn,
        )
        for turn, text in enumerate(
            (f"The baker frowned at {marker}", "The baker frowned again"), start=1
        )
    ]
    reflection = await post(
        client,
        f"{LEDGER}/agents/alice/reflections",
        belief=f"The baker resents {marker}",
        based_on=[event["id"] for event in events],
    )
    return {"events": events, "reflection": reflection}


async def _procedure(client: Any, marker: str) -> dict[str, Any]:
    """A procedure with an execution and a second version."""
    first = await post(
        client,
        "/v1/procedures",
        agent_id="assistant",
        name="send_invoice",
        description=f"Invoice {marker}",
        steps=[{"step": 1, "action": "find_address"}],
    )
    await _ok(
        await client.post(
            f"/v1/procedures/{first['id']}/executions", json={"success": True, "duration_ms": 1200}
        )
    )
    second = await post(
        client,
        f"/v1/procedures/{first['id']}/versions",
        steps=[{"step": 1, "action": "confirm_address"}, {"step": 2, "action": "send"}],
    )
    return {"procedures": [first, second]}


async def _arc(
    client: Any, marker: str, episode: dict[str, Any], ann: dict[str, Any]
) -> dict[str, Any]:
    """A closed arc around an episode and an entity."""
    arc = await post(
        client,
        "/v1/arcs",
        title=f"Ann's move {marker}",
        arc_type="interaction_arc",
        entity_ids=[ann["id"]],
        key_events=[
            {
                "memory_type": "episode",
                "memory_id": episode["id"],
                "description": f"Ann gave {marker}",
            }
        ],
    )
    await _ok(
        await client.post(
            f"/v1/arcs/{arc['id']}/close",
            json={"outcome": "Ann settled in", "lessons": ["Ask early"]},
        )
    )
    return {"arc": arc}


async def plant_every_kind(client: Any, app: Any, settings: Any, marker: str) -> dict[str, Any]:
    """Records of every kind, `marker` in their content; the ids of the main ones. The
    reflections are consolidated once (a model that proposes nothing), so they are read."""
    entities = await _entities(client, marker)
    memories = await _memories(client, marker, entities["ann"])
    planted = {
        **entities,
        **memories,
        **await _runs(client, marker),
        **await _ledger(client, marker),
        **await _procedure(client, marker),
        **await _arc(client, marker, memories["episodes"][0], entities["ann"]),
    }
    await _ok(
        await client.put(
            f"/v1/working-memory/assistant/{memories['session_id']}",
            json={"scratchpad": {"phone": marker}, "retrieved_memory_ids": [memories["new"]["id"]]},
        ),
        201,
    )
    stub = await LLMStub().start()
    try:
        job = await run_job(
            client, job_context(app, settings, llm_url=stub.base_url), "consolidation"
        )
    finally:
        await stub.stop()
    assert job["result"]["reflections_consolidated"] == 1, job
    return planted
