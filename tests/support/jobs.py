"""Helpers for job tests: a worker context with chosen settings, enqueue-and-run."""

from collections.abc import Callable
from typing import Any

import httpx
from pydantic import SecretStr

from app.core.config import JobSettings, LLMSettings, Settings
from app.services.jobs import JobContext
from app.worker import worker
from tests.support.factories import store_episode
from tests.support.llm_stub import LLMStub, completion, user_prompt


def job_context(
    app: Any,
    settings: Settings,
    *,
    llm_url: str | None = None,
    llm_timeout: float = 5.0,
    llm_api_key: str | None = None,
    **jobs: Any,
) -> JobContext:
    """A worker context on the test app's database; the LLM is the stub at `llm_url`."""
    llm = LLMSettings(
        base_url=llm_url,
        model="stub-model",
        timeout_seconds=llm_timeout,
        max_retries=1,
        backoff_seconds=0.0,
        api_key=SecretStr(llm_api_key) if llm_api_key else None,
    )
    job_settings = JobSettings(**{"worker_enabled": False, "scheduler_enabled": False, **jobs})
    return JobContext(
        app.state.sessionmaker,
        settings.model_copy(update={"llm": llm, "jobs": job_settings}),
        app.state.embedder,
    )


async def run_job(
    client: httpx.AsyncClient, ctx: JobContext, kind: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Queue a job through the API, let a worker drain the queue, return the finished job."""
    response = await client.post(f"/v1/jobs/{kind}", json=body)
    assert response.status_code == 202, response.text
    await worker.drain(ctx)
    finished = await client.get(f"/v1/jobs/{response.json()['id']}")
    assert finished.status_code == 200
    job: dict[str, Any] = finished.json()
    return job


async def consolidate(
    client: httpx.AsyncClient, app: Any, settings: Settings, answer: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """One consolidation job that succeeds; the stub LLM answers each prompt with
    `answer(prompt)`."""
    stub = await LLMStub().start()
    stub.responder = lambda body: completion(answer(user_prompt(body)))
    try:
        job = await run_job(
            client, job_context(app, settings, llm_url=stub.base_url), "consolidation"
        )
    finally:
        await stub.stop()
    assert job["status"] == "succeeded", job
    return job


async def add_episodes(client: httpx.AsyncClient, butler: str, *contents: str) -> list[str]:
    """Store episodes of one butler in order; their ids."""
    ids = []
    for content in contents:
        ids.append((await store_episode(client, content, butler=butler))["id"])
    return ids
