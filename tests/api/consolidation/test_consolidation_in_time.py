"""Consolidated facts get their valid time from the model, else from their episodes."""

from tests.support.factories import store_episode, store_fact
from tests.support.jobs import job_context, run_job
from tests.support.llm_stub import completion, user_prompt


async def test_valid_time_comes_from_the_model_else_from_the_source_episode(
    client, app, settings, llm
):
    current = await store_fact(
        client, "user", "city", "The user lives in Lyon.", valid_from="2024-01-01T00:00:00+00:00"
    )
    job = await store_episode(
        client,
        "I started at Acme in March 2021.",
        butler="assistant",
        occurred_at="2023-05-02T09:00:00+00:00",
    )
    paris = await store_episode(
        client,
        "Back then I lived in Paris.",
        butler="assistant",
        occurred_at="2022-07-01T10:00:00+00:00",
    )
    llm.reply(
        completion(
            {
                "new_facts": [
                    {
                        "subject": "user",
                        "predicate": "employer",
                        "content": "The user works at Acme.",
                        "valid_from": "2021-03-01",
                        "source_episode_ids": [job["id"]],
                    }
                ],
                "updated_facts": [
                    {
                        "target_id": current["id"],
                        "subject": "user",
                        "predicate": "city",
                        "content": "The user lived in Paris.",
                        "source_episode_ids": [paris["id"]],
                    }
                ],
            }
        )
    )
    done = await run_job(client, job_context(app, settings, llm_url=llm.base_url), "consolidation")
    assert done["status"] == "succeeded" and done["errors"] == []
    assert 'occurred_at="2023-05-02T09:00:00+00:00"' in user_prompt(llm.requests[0])

    [acme] = (await client.get("/v1/facts", params={"predicate": "employer"})).json()["items"]
    assert acme["valid_from"].startswith("2021-03-01T00:00:00")
    # The update is about a period before Lyon: history, and Lyon stays current.
    cities = (
        await client.get("/v1/facts", params={"predicate": "city", "validity": "superseded"})
    ).json()["items"]
    assert [(c["content"], c["valid_from"][:10], c["valid_until"][:10]) for c in cities] == [
        ("The user lived in Paris.", "2022-07-01", "2024-01-01")
    ]
    [lyon] = (await client.get("/v1/facts", params={"predicate": "city"})).json()["items"]
    assert lyon["id"] == current["id"]
    held = (
        await client.get(
            "/v1/facts", params={"predicate": "city", "as_of": "2023-01-01T00:00:00+00:00"}
        )
    ).json()["items"]
    assert [c["content"] for c in held] == ["The user lived in Paris."]
