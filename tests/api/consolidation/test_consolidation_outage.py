"""An LLM outage loses no episode: what expires or fails while the model is down is kept,
retried with a growing backoff, and consolidated once the model answers again."""

import re
from datetime import datetime, timedelta

from tests.support.console import overview_of
from tests.support.jobs import add_episodes, job_context, run_job
from tests.support.llm_stub import LLMStub, Reply, completion, episode_ids, user_prompt
from tests.support.metrics import sample


async def _pass(sql, hours: float) -> None:
    """Let `hours` go by for every episode: each of its timestamps moves that far back."""
    columns = await sql(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'episodes' "
        "AND data_type = 'timestamp with time zone'"
    )
    shifted = ", ".join(
        f"{c['column_name']} = {c['column_name']} - make_interval(secs => :seconds)"
        for c in columns
    )
    await sql(f"UPDATE episodes SET {shifted}", seconds=hours * 3600)


def _distil(request):
    """A model that answers: one fact per episode of the prompt, sourced from it."""
    ids = episode_ids(user_prompt(request))
    return completion(
        {
            "new_facts": [
                {
                    "subject": f"episode {i}",
                    "predicate": "noted",
                    "content": f"Noted {i}.",
                    "source_episode_ids": [episode_id],
                }
                for i, episode_id in enumerate(ids)
            ]
        }
    )


async def _episodes(client, ids):
    return [(await client.get(f"/v1/episodes/{i}")).json() for i in ids]


async def test_an_outage_longer_than_ttl_and_grace_loses_no_episode(
    client, app, sql, settings, llm
):
    ids = await add_episodes(
        client, "assistant", "I moved to Lyon.", "I like tea."
    ) + await add_episodes(client, "planner", "The launch is on Friday.")
    llm.responder = lambda request: Reply(status=503, body="overloaded")
    refused = await LLMStub().start()
    refused_url = refused.base_url
    await refused.stop()
    answering = job_context(app, settings, llm_url=llm.base_url)
    down = [answering, job_context(app, settings, llm_url=refused_url)]
    days = settings.episode_ttl_days + settings.unconsolidated_grace_days + 3

    for step in range(int(days // 2)):
        await _pass(sql, 48)
        job = await run_job(client, down[step % 2], "consolidation")
        assert job["result"]["episodes_consolidated"] == 0
        cleanup = await run_job(client, answering, "cleanup")
        assert cleanup["status"] == "succeeded", cleanup
        assert cleanup["result"]["remaining"] == 3, (step, cleanup["result"])

    waiting = await _episodes(client, ids)
    assert {e["consolidation_status"] for e in waiting} == {"failed"}
    assert all(
        datetime.fromisoformat(e["expires_at"]) < datetime.now().astimezone() for e in waiting
    )
    assert all(e["last_error"] for e in waiting)

    llm.responder = _distil
    await _pass(sql, 24 * 1.01)  # the longest backoff
    job = await run_job(client, answering, "consolidation")
    assert (
        job["status"],
        job["result"]["episodes_consolidated"],
        job["result"]["facts_created"],
    ) == ("succeeded", 3, 3)
    read = await _episodes(client, ids)
    assert {e["consolidation_status"] for e in read} == {"consolidated"}
    assert all(e["next_attempt_at"] is None for e in read)
    links = await sql(
        "SELECT target_id::text AS id FROM memory_links "
        "WHERE relation = 'derived_from' AND target_type = 'episode'"
    )
    assert sorted(row["id"] for row in links) == sorted(ids)

    cleanup = await run_job(client, answering, "cleanup")
    assert (cleanup["result"]["expired_deleted"], cleanup["result"]["remaining"]) == (3, 0)
    events = (await client.get("/v1/events", params={"event_type": "episodes_deleted"})).json()
    assert [
        (e["payload"]["reason"], e["payload"]["unconsolidated_episode_ids"])
        for e in events["items"]
    ] == [("expired", [])]


async def test_a_failed_episode_is_retried_after_a_backoff_that_doubles_up_to_its_cap(
    client, app, sql, settings, llm
):
    [episode_id] = await add_episodes(client, "assistant", "Cursed episode.")
    llm.responder = lambda request: Reply(status=500, body="down")
    ctx = job_context(
        app,
        settings,
        llm_url=llm.base_url,
        consolidation_max_attempts=2,
        consolidation_retry_backoff_hours=1,
        consolidation_retry_max_backoff_hours=4,
    )

    async def attempt() -> dict:
        calls = len(llm.requests)
        await run_job(client, ctx, "consolidation")
        episode = (await client.get(f"/v1/episodes/{episode_id}")).json()
        episode["asked"] = len(llm.requests) > calls
        return episode

    assert (await attempt())["consolidation_status"] == "pending"  # a first failure
    failed = await attempt()
    assert (failed["consolidation_status"], failed["retry_count"]) == ("failed", 2)
    waits = []
    for _ in range(4):
        [now] = await sql("SELECT now() AS t")
        wait = datetime.fromisoformat(failed["next_attempt_at"]) - now["t"]
        waits.append(round(wait / timedelta(hours=1)))
        await _pass(sql, waits[-1] * 0.9)
        assert not (await attempt())["asked"], "retried before its time"
        await _pass(sql, waits[-1] * 0.1 + 0.01)
        failed = await attempt()
        assert failed["asked"] and failed["consolidation_status"] == "failed"
    assert waits == [1, 2, 4, 4]

    llm.responder = None  # answers: nothing to distil
    await _pass(sql, 4.01)
    assert (await attempt())["consolidation_status"] == "consolidated"


async def test_a_forgotten_episode_is_never_sent_to_the_model(client, app, settings, llm):
    gone, kept = await add_episodes(client, "assistant", "Forget me.", "Keep me.")
    assert (await client.post(f"/v1/episodes/{gone}/forget")).status_code == 200
    await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert [episode_ids(p) for p in llm.prompts()] == [[kept]]


async def test_without_an_llm_the_grace_period_still_ends_unconsolidated_episodes(
    client, app, sql, settings, llm
):
    [episode_id] = await add_episodes(client, "assistant", "Nobody reads me.")
    await _pass(sql, 24 * (settings.episode_ttl_days + settings.unconsolidated_grace_days + 1))
    with_llm = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "cleanup")
    assert (
        with_llm["result"]["unconsolidated_deleted"],
        with_llm["result"]["expired_kept_unconsolidated"],
    ) == (0, 1)
    without = await run_job(client, job_context(app, settings), "cleanup")
    assert without["result"]["unconsolidated_deleted"] == 1
    assert (await client.get(f"/v1/episodes/{episode_id}")).status_code == 404


async def test_episodes_awaiting_consolidation_show_in_stats_metrics_and_console(
    client, app, sql, settings, llm
):
    await add_episodes(client, "assistant", "One.", "Two.")
    await add_episodes(client, "planner", "Three.")
    llm.responder = lambda request: (
        Reply(status=500, body="down")
        if "planner" in user_prompt(request)
        else completion({"new_facts": []})
    )
    ctx = job_context(app, settings, llm_url=llm.base_url, consolidation_max_attempts=1)
    await run_job(client, ctx, "consolidation")
    await add_episodes(client, "assistant", "Four.")

    stats = (await client.get("/v1/stats")).json()["episodes"]
    assert (stats["unconsolidated"], stats["failed"]) == (1, 1)
    assert stats["next_retry_at"] is not None

    text = (await client.get("/metrics")).text
    assert sample(text, "engram_episodes_awaiting_consolidation", status="pending") == 1
    assert sample(text, "engram_episodes_awaiting_consolidation", status="failed") == 1

    overview = await overview_of(app)
    assert re.search(r'id="failed">1<', overview)
