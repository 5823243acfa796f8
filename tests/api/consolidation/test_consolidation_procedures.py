"""Consolidation proposes procedures: stored as drafts of the butler, learned from episodes."""

from tests.support.jobs import add_episodes, job_context, run_job
from tests.support.llm_stub import completion


def _proposal(name, *sources, steps=None):
    return {
        "name": name,
        "description": "Book a meeting the user asks for.",
        "steps": steps
        or [
            {"action": "confirm_time_zone"},
            {"action": "create_event", "params_template": {"title": "{{title}}"}},
        ],
        "preconditions": {"request": "meeting"},
        "source_episode_ids": list(sources),
    }


async def test_proposed_procedure_is_stored_as_a_draft_with_links(client, app, settings, llm):
    asked, booked = await add_episodes(
        client, "assistant", "Which time zone are you in?", "Booked the meeting for 10:00 CET."
    )
    llm.reply(completion({"procedures": [_proposal("schedule_meeting", asked, booked)]}))
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "succeeded", job
    assert (job["result"]["procedures_created"], job["result"]["links_created"]) == (1, 2)
    [stored] = (await client.get("/v1/procedures", params={"agent_id": "assistant"})).json()[
        "items"
    ]
    assert (stored["name"], stored["status"], stored["version"]) == ("schedule_meeting", "draft", 1)
    assert [(s["step"], s["action"]) for s in stored["steps"]] == [
        (1, "confirm_time_zone"),
        (2, "create_event"),
    ]
    assert stored["steps"][1]["params_template"] == {"title": "{{title}}"}
    assert sorted(ref["memory_id"] for ref in stored["learned_from"]) == sorted([asked, booked])
    links = (
        await client.get("/v1/links", params={"memory_type": "episode", "memory_id": booked})
    ).json()["items"]
    assert [(link["source_type"], link["relation"]) for link in links] == [
        ("procedure", "derived_from")
    ]


async def test_prompt_asks_for_optional_procedures(client, app, settings, llm):
    await add_episodes(client, "assistant", "hello")
    await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert '"procedures": [' in llm.prompts()[0]


async def test_a_taken_name_is_an_action_error_and_the_rest_is_kept(client, app, settings, llm):
    await client.post(
        "/v1/procedures",
        json={
            "agent_id": "assistant",
            "name": "schedule_meeting",
            "steps": [{"step": 1, "action": "ask"}],
        },
    )
    [episode] = await add_episodes(client, "assistant", "I like tea.")
    llm.reply(
        completion(
            {
                "new_rules": [{"content": "Offer tea.", "source_episode_ids": [episode]}],
                "procedures": [
                    _proposal("schedule_meeting", episode),
                    _proposal("make_tea", episode, steps=["boil_water", "steep"]),
                ],
            }
        )
    )
    job = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert job["status"] == "succeeded"
    assert (job["result"]["procedures_created"], job["result"]["rules_created"]) == (1, 1)
    assert any(
        "procedures[0]" in error and "already has a procedure" in error for error in job["errors"]
    )
    names = sorted(p["name"] for p in (await client.get("/v1/procedures")).json()["items"])
    assert names == ["make_tea", "schedule_meeting"]


async def test_sources_outside_the_batch_are_not_linked(client, app, settings, llm):
    [episode] = await add_episodes(client, "assistant", "Steps to reset a password.")
    stranger = "00000000-0000-4000-8000-000000000000"
    llm.reply(completion({"procedures": [_proposal("reset_password", episode, stranger)]}))
    await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    [stored] = (await client.get("/v1/procedures")).json()["items"]
    assert stored["learned_from"] == [{"memory_type": "episode", "memory_id": episode}]
