"""Ledger reflections feed consolidation: the model may turn a belief into facts and
rules of the ledger's scope, linked `derived_from` the reflection, which is read once."""

from tests.support.http import post
from tests.support.jobs import job_context, run_job
from tests.support.llm_stub import Reply, completion, episode_ids, user_prompt

LEDGER = "town"


async def _reflection(client, belief="Ann trusts Bo with the keys to the bakery."):
    event = await post(
        client,
        f"/v1/ledgers/{LEDGER}/events",
        agent_id="ann",
        kind="agent.spoke",
        content="I gave Bo the bakery keys.",
        turn=3,
    )
    return await post(
        client,
        f"/v1/ledgers/{LEDGER}/agents/ann/reflections",
        belief=belief,
        based_on=[event["id"]],
    )


async def test_a_reflection_becomes_a_fact_derived_from_it(client, app, settings, llm, sql):
    reflection = await _reflection(client)
    reflection_id = reflection["id"]
    llm.reply(
        completion(
            {
                "new_facts": [
                    {
                        "subject": "Ann",
                        "predicate": "trusts",
                        "content": "Ann trusts Bo.",
                        "source_episode_ids": [reflection_id],
                    }
                ]
            }
        )
    )

    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")

    assert job["status"] == "succeeded", job
    assert (job["result"]["reflections_consolidated"], job["result"]["facts_created"]) == (1, 1)
    prompt = user_prompt(llm.requests[-1])
    assert episode_ids(prompt) == [reflection_id]
    assert "ann reflected: Ann trusts Bo with the keys to the bakery." in prompt
    [fact] = (await client.get("/v1/facts", params={"scope": LEDGER})).json()["items"]
    assert (fact["content"], fact["scope"], fact["source_episode_id"]) == (
        "Ann trusts Bo.",
        LEDGER,
        None,
    )
    links = await sql(
        "SELECT target_type, target_id::text AS target FROM memory_links "
        "WHERE source_id = CAST(:id AS uuid) AND relation = 'derived_from'",
        id=fact["id"],
    )
    assert [(row["target_type"], row["target"]) for row in links] == [
        ("agent_event", reflection_id)
    ]

    again = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert again["result"]["reflections_consolidated"] == 0
    assert len(llm.requests) == 1, "a read reflection is not sent again"


async def test_a_failed_batch_leaves_its_reflections_unread(client, app, settings, llm):
    await _reflection(client)
    llm.reply(Reply(content="not json at all"))
    failed = await run_job(
        client, job_context(app, settings, llm_url=llm.base_url), "consolidation"
    )
    assert failed["result"]["groups_failed"] == 1
    assert failed["result"]["reflections_consolidated"] == 0

    llm.reply(completion({}))
    retried = await run_job(
        client, job_context(app, settings, llm_url=llm.base_url), "consolidation"
    )
    assert retried["result"]["reflections_consolidated"] == 1


async def test_another_tenants_reflections_are_not_read(client, tenant_client, app, settings, llm):
    other = await tenant_client("other")
    await _reflection(other)
    llm.reply(completion({}))
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["result"]["reflections_consolidated"] == 0
    assert llm.requests == []
