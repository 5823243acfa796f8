"""Every action consolidation fails is named in the job's errors by its place in the
model's answer."""

import asyncio

import pytest

from app.worker import worker
from tests.support.factories import store_fact
from tests.support.jobs import add_episodes, job_context
from tests.support.llm_stub import LLMStub, Reply, completion

TENANT = "default"
LABEL = "tenant 'default' butler 'planner': "


@pytest.fixture
async def llm():
    stub = await LLMStub().start()
    yield stub
    await stub.stop()


def _update(target: str, subject: str, predicate: str, content: str) -> dict:
    return {"target_id": target, "subject": subject, "predicate": predicate,
            "content": content}


async def _run_while_the_model_thinks(client, app, settings, llm, answer: dict,
                                      meanwhile) -> dict:
    """A consolidation job whose model answers `answer` once `meanwhile()` has run."""
    gate = asyncio.Event()
    llm.reply(Reply(content=completion(answer).content, gate=gate))
    queued = (await client.post("/v1/jobs/consolidation")).json()
    running = asyncio.create_task(worker.drain(job_context(app, settings,
                                                           llm_url=llm.base_url)))
    for _ in range(3000):
        if llm.requests or running.done():
            break
        await asyncio.sleep(0.01)
    assert llm.requests, "the worker never called the model"
    await meanwhile()
    gate.set()
    await asyncio.wait_for(running, timeout=60)
    return (await client.get(f"/v1/jobs/{queued['id']}")).json()


async def test_an_action_is_named_by_its_index_in_the_answer(client, app, settings, llm, sql):
    """An entry the parser could not read still holds its place in the answer's list."""
    fact = await store_fact(client, "trip", "day", "The trip is on Friday.", scope="planner")
    await add_episodes(client, "planner", "Nothing new.")

    async def delete_fact() -> None:
        await sql("DELETE FROM facts WHERE id = :id", id=fact["id"])

    job = await _run_while_the_model_thinks(
        client, app, settings, llm, {"confirmations": ["not-a-uuid", fact["id"]]}, delete_fact)

    assert job["errors"] == [
        LABEL + "parse: confirmations[0]: not a valid UUID: 'not-a-uuid'",
        LABEL + f"confirmations[1]: no fact or rule {fact['id']}",
    ]
