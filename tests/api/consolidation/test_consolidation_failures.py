"""Consolidation when the model misbehaves: bad output, timeouts, 500s, a failing group."""

import pytest

from app.worker import worker
from app.worker.consolidation.parser import NO_JSON_ERROR
from tests.support.jobs import add_episodes, job_context, run_job
from tests.support.llm_stub import Reply, completion, user_prompt

NOTHING = {"new_facts": [], "updated_facts": [], "new_rules": [], "confirmations": []}


async def _episode(client, episode_id):
    return (await client.get(f"/v1/episodes/{episode_id}")).json()


def _fact(subject, predicate, content, *sources):
    return {
        "subject": subject,
        "predicate": predicate,
        "content": content,
        "source_episode_ids": list(sources),
    }


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "bare"])
async def test_fenced_and_bare_output_both_consolidate(client, app, settings, llm, fenced):
    [episode_id] = await add_episodes(client, "assistant", "My dog is called Rex.")
    llm.reply(
        completion(
            {"new_facts": [_fact("dog", "name", "The dog is Rex.", episode_id)]}, fenced=fenced
        )
    )
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert (job["status"], job["result"]["facts_created"]) == ("succeeded", 1)
    assert (await _episode(client, episode_id))["consolidation_status"] == "consolidated"


@pytest.mark.parametrize(
    "output, error",
    [
        ("", NO_JSON_ERROR),
        ("Sorry, I cannot help with that.", NO_JSON_ERROR),
        ('```json\n{"new_facts": [}\n```', "Invalid JSON in consolidation output"),
    ],
    ids=["empty", "prose", "malformed"],
)
async def test_unusable_output_keeps_episodes_pending_with_the_error(
    client, app, settings, llm, output, error
):
    [episode_id] = await add_episodes(client, "assistant", "Something.")
    llm.reply(Reply(content=output))
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "failed"
    assert job["result"]["groups_failed"] == 1
    assert job["result"]["episodes_retrying"] == 1
    episode = await _episode(client, episode_id)
    assert (episode["consolidated"], episode["consolidation_status"], episode["retry_count"]) == (
        False,
        "pending",
        1,
    )
    assert error in episode["last_error"]
    assert error in job["errors"][0]


async def test_empty_answer_object_consolidates_with_nothing_written(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Hello.")
    llm.reply(completion(NOTHING))
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "succeeded"
    assert job["result"]["facts_created"] == 0
    assert (await _episode(client, episode_id))["consolidation_status"] == "consolidated"


async def test_timeout_is_retried_then_recorded_on_the_episodes(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Slow day.")
    llm.reply(Reply(content="{}", delay=1.5), Reply(content="{}", delay=1.5))
    ctx = job_context(app, settings, llm_url=llm.base_url, llm_timeout=0.3)
    job = await run_job(client, ctx, "consolidation")
    assert len(llm.requests) == 2  # the first attempt and one retry
    assert job["status"] == "failed"
    episode = await _episode(client, episode_id)
    assert (episode["consolidation_status"], episode["retry_count"]) == ("pending", 1)
    assert episode["last_error"] == ("LLM request failed after 2 attempt(s): timed out after 0.3s")


async def test_server_error_is_retried_and_a_later_success_counts(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "I use vim.")
    llm.reply(
        Reply(status=500, body='{"error": "boom"}'),
        completion({"new_facts": [_fact("user", "editor", "Uses vim.", episode_id)]}),
    )
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert len(llm.requests) == 2
    assert (job["status"], job["result"]["facts_created"]) == ("succeeded", 1)
    assert (await _episode(client, episode_id))["retry_count"] == 0


async def test_server_errors_on_every_attempt_fail_the_group(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Anything.")
    llm.reply(Reply(status=500, body="down"), Reply(status=503, body="still down"))
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "failed"
    assert (await _episode(client, episode_id))["last_error"] == (
        "LLM request failed after 2 attempt(s): HTTP 503: still down"
    )


async def test_client_error_is_not_retried(client, app, settings, llm):
    await add_episodes(client, "assistant", "Anything.")
    llm.reply(Reply(status=401, body='{"error": "bad key"}'))
    await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert len(llm.requests) == 1


async def test_episodes_fail_after_the_configured_number_of_attempts(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Cursed episode.")
    llm.responder = lambda request: Reply(status=500, body="down")
    ctx = job_context(app, settings, llm_url=llm.base_url, consolidation_max_attempts=2)
    first = await run_job(client, ctx, "consolidation")
    second = await run_job(client, ctx, "consolidation")
    assert (first["result"]["episodes_retrying"], first["result"]["episodes_failed"]) == (1, 0)
    assert (second["result"]["episodes_retrying"], second["result"]["episodes_failed"]) == (0, 1)
    episode = await _episode(client, episode_id)
    assert (episode["consolidation_status"], episode["retry_count"]) == ("failed", 2)
    calls = len(llm.requests)
    third = await run_job(client, ctx, "consolidation")
    assert len(llm.requests) == calls  # a failed episode no longer blocks the backlog
    assert third["result"]["groups_processed"] == 0


async def test_failing_group_does_not_stop_the_others(client, app, settings, llm):
    [bad] = await add_episodes(client, "broken-butler", "This group breaks the model.")
    [good] = await add_episodes(client, "assistant", "I live in Oslo.")

    def respond(request):
        prompt = user_prompt(request)
        if "broken-butler" in prompt:
            return Reply(status=500, body="model crashed")
        return completion({"new_facts": [_fact("user", "city", "Lives in Oslo.", good)]})

    llm.responder = respond
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "succeeded"
    result = job["result"]
    assert (result["groups_succeeded"], result["groups_failed"]) == (1, 1)
    assert (await _episode(client, good))["consolidation_status"] == "consolidated"
    failed = await _episode(client, bad)
    assert (failed["consolidation_status"], failed["retry_count"]) == ("pending", 1)
    assert job["errors"] == [
        "tenant 'default' butler 'broken-butler': LLM request failed after "
        "2 attempt(s): HTTP 500: model crashed"
    ]


async def test_one_failing_action_does_not_block_the_others(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "Facts galore.")
    llm.reply(
        completion(
            {
                "new_facts": [
                    _fact("x" * 300, "too_long", "Subject beyond 200 chars.", episode_id),
                    _fact("user", "pet", "Has a cat.", episode_id),
                ],
                "updated_facts": [
                    {
                        **_fact("user", "city", "Rome."),
                        "target_id": "00000000-0000-4000-8000-000000000000",
                    }
                ],
                "new_rules": [{"content": "Mention the cat.", "source_episode_ids": [episode_id]}],
            }
        )
    )
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "succeeded"
    result = job["result"]
    assert (
        result["facts_created"],
        result["facts_updated"],
        result["rules_created"],
        result["action_errors"],
        result["targets_not_shown"],
    ) == (1, 0, 1, 1, 1)
    invalid, not_shown = job["errors"]
    assert invalid.startswith("tenant 'default' butler 'assistant': new_facts[0]: invalid subject:")
    assert not_shown == (
        "tenant 'default' butler 'assistant': updated_facts[0]: target fact "
        "00000000-0000-4000-8000-000000000000 not shown to the model"
    )
    assert (await _episode(client, episode_id))["consolidation_status"] == "consolidated"


async def test_source_ids_outside_the_batch_are_not_linked(client, app, sql, settings, llm):
    [other] = await add_episodes(client, "planner", "Planner episode.")
    await sql("UPDATE episodes SET consolidated = true, consolidation_status = 'consolidated'")
    [mine] = await add_episodes(client, "assistant", "I drink coffee.")
    llm.reply(completion({"new_facts": [_fact("user", "drink", "Coffee.", mine, other)]}))
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["result"]["links_created"] == 1
    rows = await sql(
        "SELECT target_id::text AS target FROM memory_links WHERE relation = 'derived_from'"
    )
    assert [row["target"] for row in rows] == [mine]


async def test_parse_errors_beside_valid_actions_are_reported(client, app, settings, llm):
    [episode_id] = await add_episodes(client, "assistant", "I am 40.")
    llm.reply(
        completion(
            {
                "new_facts": [_fact("user", "age", "Is 40.", episode_id), {"subject": "user"}],
                "confirmations": ["not-a-uuid"],
            }
        )
    )
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "succeeded"
    assert job["result"]["parse_errors"] == 2
    assert job["errors"] == [
        "tenant 'default' butler 'assistant': parse: new_facts[1]: missing or empty "
        "predicate, content",
        "tenant 'default' butler 'assistant': parse: confirmations[0]: not a valid UUID: "
        "'not-a-uuid'",
    ]


async def test_a_rerun_consolidation_reports_every_attempts_figures(
    client, app, sql, settings, llm
):
    """An attempt that died had created 100 facts; the re-run adds 1 and reports 101."""
    [episode_id] = await add_episodes(client, "assistant", "My dog is called Rex.")
    llm.reply(completion({"new_facts": [_fact("dog", "name", "The dog is Rex.", episode_id)]}))
    job = (await client.post("/v1/jobs/consolidation")).json()
    await sql(
        "UPDATE jobs SET status = 'running', attempts = 1, worker_id = 'dead', "
        "lease_expires_at = now() - interval '1 second', progress = "
        '\'{"facts_created": 100, "groups_processed": 4, "groups_succeeded": 4, '
        '"episodes_consolidated": 200}\''
    )
    await worker.drain(job_context(app, settings, llm_url=llm.base_url))
    result = (await client.get(f"/v1/jobs/{job['id']}")).json()["result"]
    assert (
        result["facts_created"],
        result["groups_processed"],
        result["groups_succeeded"],
        result["episodes_consolidated"],
    ) == (101, 5, 5, 201)
