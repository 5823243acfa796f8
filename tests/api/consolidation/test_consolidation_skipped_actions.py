"""Every action consolidation skips or fails is named in the job's errors, and the actions
after it in the model's answer still run."""

import asyncio
import uuid

from app.worker import worker
from tests.support.factories import store_fact, store_rule
from tests.support.jobs import add_episodes, job_context
from tests.support.llm_stub import Reply, completion

TENANT = "default"
LABEL = "tenant 'default' butler 'planner': "


def _update(target: str, subject: str, predicate: str, content: str) -> dict:
    return {"target_id": target, "subject": subject, "predicate": predicate, "content": content}


async def _run_while_the_model_thinks(client, app, settings, llm, answer: dict, meanwhile) -> dict:
    """A consolidation job whose model answers `answer` once `meanwhile()` has run."""
    gate = asyncio.Event()
    llm.reply(Reply(content=completion(answer).content, gate=gate))
    queued = (await client.post("/v1/jobs/consolidation")).json()
    running = asyncio.create_task(worker.drain(job_context(app, settings, llm_url=llm.base_url)))
    for _ in range(3000):
        if llm.requests or running.done():
            break
        await asyncio.sleep(0.01)
    assert llm.requests, "the worker never called the model"
    await meanwhile()
    gate.set()
    await asyncio.wait_for(running, timeout=60)
    return (await client.get(f"/v1/jobs/{queued['id']}")).json()


async def test_each_skipped_action_is_named_and_the_later_ones_apply(
    client, limited_client, app, settings, llm, sql
):
    office = await store_fact(client, "office", "city", "The office is in Lyon.")
    trip = await store_fact(client, "trip", "day", "The trip is on Friday.", scope="planner")
    hotel = await store_fact(client, "trip", "hotel", "The hotel is booked.", scope="planner")
    unseen = await store_fact(client, "trip", "risk", "The trip risks rain.", scope="critic")
    polite = await store_rule(client, "Answer politely.")
    early = await store_rule(client, "Plan trips early.", scope="planner")
    planner = await limited_client(TENANT, ["planner"])
    [episode] = await add_episodes(planner, "planner", "The trip moved to Saturday by train.")
    unknown = str(uuid.uuid4())
    answer = {
        "new_facts": [
            {
                "subject": "trip",
                "predicate": "transport",
                "content": "The trip is by train.",
                "source_episode_ids": [episode],
            }
        ],
        "updated_facts": [
            _update(unseen["id"], "trip", "risk", "The trip risks snow."),
            _update(office["id"], "office", "city", "The office is in Paris."),
            _update(hotel["id"], "trip", "hotel", "The hotel is cancelled."),
            _update(trip["id"], "trip", "day", "The trip is on Saturday."),
            _update(trip["id"], "trip", "day", "The trip is on Sunday."),
        ],
        "confirmations": [unknown, polite["id"], trip["id"], early["id"]],
    }

    async def delete_hotel_fact() -> None:
        await sql("DELETE FROM facts WHERE id = :id", id=hotel["id"])

    job = await _run_while_the_model_thinks(client, app, settings, llm, answer, delete_hotel_fact)

    assert job["status"] == "succeeded", job
    assert job["errors"] == [
        LABEL + line
        for line in (
            f"updated_facts[0]: target fact {unseen['id']} not shown to the model",
            f"updated_facts[1]: target fact {office['id']} in scope 'global' not writable by the "
            "episodes' writers (limited to planner)",
            f"updated_facts[2]: target fact {hotel['id']} not found",
            f"updated_facts[4]: target fact {trip['id']} is superseded, not active",
            f"confirmations[0]: fact or rule {unknown} not shown to the model",
            f"confirmations[1]: rule {polite['id']} in scope 'global' not writable by the "
            "episodes' writers (limited to planner)",
            f"confirmations[2]: fact {trip['id']} is superseded; only active facts can be "
            "confirmed",
        )
    ]
    result = job["result"]
    assert (
        result["facts_created"],
        result["facts_updated"],
        result["confirmations"],
        result["targets_not_shown"],
        result["writes_refused"],
        result["action_errors"],
    ) == (1, 1, 1, 2, 2, 3)
    facts = await sql(
        "SELECT content FROM facts WHERE tenant_id = :t AND scope = 'planner' "
        "AND validity = 'active'",
        t=TENANT,
    )
    assert {row["content"] for row in facts} == {
        "The trip is by train.",
        "The trip is on Saturday.",
    }
    confirmed = (await client.get(f"/v1/rules/{early['id']}")).json()
    assert confirmed["last_confirmed_at"] != early["last_confirmed_at"]


async def test_an_action_is_named_by_its_index_in_the_answer(client, app, settings, llm, sql):
    """An entry the parser could not read still holds its place in the answer's list."""
    fact = await store_fact(client, "trip", "day", "The trip is on Friday.", scope="planner")
    await add_episodes(client, "planner", "Nothing new.")

    async def delete_fact() -> None:
        await sql("DELETE FROM facts WHERE id = :id", id=fact["id"])

    job = await _run_while_the_model_thinks(
        client, app, settings, llm, {"confirmations": ["not-a-uuid", fact["id"]]}, delete_fact
    )

    assert job["errors"] == [
        LABEL + "parse: confirmations[0]: not a valid UUID: 'not-a-uuid'",
        LABEL + f"confirmations[1]: no fact or rule {fact['id']}",
    ]
