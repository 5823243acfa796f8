"""GET /metrics: Prometheus text with requests by route template, the model queue, the pool
and jobs."""

import re

from tests.support.jobs import job_context, run_job
from tests.support.metrics import sample


async def test_requests_are_counted_by_route_template_and_status(client):
    route = "/v1/episodes/{episode_id}"
    before = sample(
        (await client.get("/metrics")).text,
        "engram_http_requests_total",
        method="GET",
        route=route,
        status="404",
    )
    for _ in range(3):
        missing = await client.get("/v1/episodes/00000000-0000-4000-8000-000000000000")
        assert missing.status_code == 404

    scraped = await client.get("/metrics")

    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    text = scraped.text
    assert (
        sample(text, "engram_http_requests_total", method="GET", route=route, status="404")
        == before + 3
    )
    assert (
        sample(text, "engram_http_request_duration_seconds_count", method="GET", route=route) >= 3
    )
    assert "00000000-0000-4000-8000-000000000000" not in text, "raw paths are not labels"


async def test_model_queue_pool_and_jobs_are_reported(client, app, settings):
    await client.post("/v1/search", json={"query": "anything at all"})
    before = sample(
        (await client.get("/metrics")).text, "engram_jobs_total", kind="decay", status="succeeded"
    )
    await run_job(client, job_context(app, settings), "decay")

    text = (await client.get("/metrics")).text

    assert sample(text, "engram_jobs_total", kind="decay", status="succeeded") == before + 1
    assert sample(text, "engram_job_duration_seconds_count", kind="decay") >= 1
    assert sample(text, "engram_model_wait_seconds_count") >= 1
    assert sample(text, "engram_db_pool_size") == settings.db_pool_size
    assert re.search(r"^engram_model_queue_chunks \d", text, re.MULTILINE)
    assert re.search(r"^engram_db_pool_connections_in_use \d", text, re.MULTILINE)


async def test_metrics_need_no_api_key(app):
    import httpx

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as anonymous:
        assert (await anonymous.get("/metrics")).status_code == 200


async def test_unknown_methods_share_one_label(client):
    for method in ("BREW", "PROPFIND", "X-ANYTHING"):
        await client.request(method, "/healthz")

    text = (await client.get("/metrics")).text

    assert (
        sample(text, "engram_http_requests_total", method="other", route="/healthz", status="405")
        >= 3
    )
    for method in ("BREW", "PROPFIND", "X-ANYTHING"):
        assert f'method="{method}"' not in text
