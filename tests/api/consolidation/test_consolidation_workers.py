"""Concurrency: two workers on one backlog, group locks, no row locks during the model call."""

import asyncio
import json
from collections import Counter

from app.repositories import consolidation as consolidation_rows
from app.worker import worker
from tests.support.jobs import add_episodes, job_context, run_job
from tests.support.llm_stub import Reply, completion, episode_ids, user_prompt


def _one_fact_per_episode(request):
    reply = completion(
        {
            "new_facts": [
                {
                    "subject": f"episode {episode_id}",
                    "predicate": "seen",
                    "content": "Seen once.",
                    "source_episode_ids": [episode_id],
                }
                for episode_id in episode_ids(user_prompt(request))
            ]
        }
    )
    reply.delay = 0.1  # keep both workers busy at the same time
    return reply


async def test_two_workers_process_each_episode_exactly_once(client, app, sql, settings, llm):
    backlog = []
    for butler in ("alpha", "beta", "gamma", "delta"):
        backlog += await add_episodes(client, butler, *(f"{butler} {i}" for i in range(3)))
    llm.responder = _one_fact_per_episode
    first = (await client.post("/v1/jobs/consolidation")).json()
    second = (await client.post("/v1/jobs/consolidation")).json()
    worker_a = job_context(app, settings, llm_url=llm.base_url, consolidation_batch_size=2)
    worker_b = job_context(app, settings, llm_url=llm.base_url, consolidation_batch_size=2)

    claimed = await asyncio.gather(worker.run_once(worker_a), worker.run_once(worker_b))

    assert {str(job.id) for job in claimed} == {first["id"], second["id"]}
    prompted = Counter(i for prompt in llm.prompts() for i in episode_ids(prompt))
    assert prompted == Counter(dict.fromkeys(backlog, 1))
    jobs = [(await client.get(f"/v1/jobs/{j['id']}")).json() for j in (first, second)]
    assert [j["status"] for j in jobs] == ["succeeded", "succeeded"]
    assert sum(j["result"]["episodes_consolidated"] for j in jobs) == 12
    assert all(j["result"]["episodes_consolidated"] > 0 for j in jobs)  # both did work
    links = await sql(
        "SELECT target_id::text AS episode, count(*) AS n FROM memory_links "
        "WHERE relation = 'derived_from' GROUP BY 1"
    )
    assert {row["episode"]: row["n"] for row in links} == dict.fromkeys(backlog, 1)
    facts = await sql("SELECT count(*) AS n FROM facts")
    assert facts[0]["n"] == 12
    pending = await sql("SELECT count(*) AS n FROM episodes WHERE NOT consolidated")
    assert pending[0]["n"] == 0


async def test_episodes_stay_readable_while_the_model_is_thinking(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Waiting on the model.")
    gate = asyncio.Event()
    llm.reply(Reply(content=json.dumps({"new_facts": []}), gate=gate))
    await client.post("/v1/jobs/consolidation")
    running = asyncio.create_task(worker.run_once(job_context(app, settings, llm_url=llm.base_url)))
    for _ in range(3000):
        if llm.requests or running.done():
            break
        await asyncio.sleep(0.01)
    assert llm.requests, "the worker never called the model"
    # No row lock is held during the call: a reference bump (an UPDATE) goes through.
    read = await asyncio.wait_for(client.get(f"/v1/episodes/{episode_id}"), timeout=30)
    assert (read.status_code, read.json()["reference_count"]) == (200, 1)
    gate.set()
    await running


async def test_a_group_locked_by_another_worker_is_left_to_it(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Someone else has this.")
    other = job_context(app, settings)
    async with other.connection() as conn:
        assert await consolidation_rows.try_lock_group(
            conn, tenant_id="default", butler="assistant"
        )
        job = await run_job(
            client, job_context(app, settings, llm_url=llm.base_url), "consolidation"
        )
        await consolidation_rows.unlock_group(conn, tenant_id="default", butler="assistant")
    assert (job["status"], job["result"]["groups_processed"]) == ("succeeded", 0)
    assert llm.requests == []
    episode = (await client.get(f"/v1/episodes/{episode_id}")).json()
    assert (episode["consolidation_status"], episode["retry_count"]) == ("pending", 0)
