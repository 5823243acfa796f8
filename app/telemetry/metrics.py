"""Prometheus metrics at /metrics: requests, the read path's stages, the model queue, the
database pool, jobs and the episodes awaiting consolidation.

Metrics live in the process's default registry (with `--workers N`, each worker process
answers for itself). Gauges read their value when scraped.
"""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from starlette.types import Message, Receive, Scope, Send

from app.core.asgi import HttpMiddleware
from app.telemetry.stages import Stages

logger = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "engram_http_requests_total", "HTTP requests answered.", ["method", "route", "status"]
)
REQUEST_SECONDS = Histogram(
    "engram_http_request_duration_seconds",
    "Time to answer an HTTP request.",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
)
# A read's stages take from well under a millisecond (fusion) to seconds (a remote model).
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
READ_STAGE_SECONDS = Histogram(
    "engram_read_stage_seconds",
    "Time a stage of a search, recall or context took (as its Server-Timing header says).",
    ["operation", "stage"],
    buckets=STAGE_BUCKETS,
)
MODEL_QUEUE = Gauge("engram_model_queue_chunks", "Model calls waiting in the embedding queue.")
MODEL_WAIT_SECONDS = Histogram(
    "engram_model_wait_seconds",
    "Time an embedding request waited for and ran on the model.",
    buckets=LATENCY_BUCKETS,
)
POOL_IN_USE = Gauge(
    "engram_db_pool_connections_in_use", "Database connections checked out of the request pool."
)
POOL_SIZE = Gauge("engram_db_pool_size", "Connections the request pool keeps open.")
JOBS = Counter("engram_jobs_total", "Background jobs finished.", ["kind", "status"])
CONSOLIDATION_BACKLOG = Gauge(
    "engram_episodes_awaiting_consolidation",
    "Episodes of every tenant not consolidated yet (nor forgotten), by consolidation status: "
    "pending, or failed (retried after a backoff).",
    ["status"],
)
EMBEDDINGS_DEFERRED = Counter(
    "engram_embeddings_deferred_total",
    "Memories stored without vectors because the remote embedding model failed or was slow; "
    "the embedding backlog embeds them later.",
)
EMBEDDING_BACKLOG = Gauge(
    "engram_embedding_backlog",
    "Memories of every tenant stored without vectors, waiting for the embedding backlog.",
)
REFERENCES_WAITING = Gauge(
    "engram_references_waiting",
    "Memories whose references, counted by recall, context or a read on a replica, wait for "
    "the next write of the counts.",
)
REFERENCES_DROPPED = Counter(
    "engram_references_dropped_total",
    "References not counted because too many memories waited for their counts' write.",
)
# The backlog's counts are read from the database when scraped, for at most this long.
BACKLOG_READ_SECONDS = 5.0
BacklogReader = Callable[[], Awaitable[dict[str, int]]]
JOB_SECONDS = Histogram(
    "engram_job_duration_seconds",
    "Time a background job ran.",
    ["kind"],
    buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600),
)


# Any other method is labelled "other", so no caller can add label series.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    """The method as a label: one of METHODS, else "other"."""
    return method if method in METHODS else "other"


class MetricsMiddleware(HttpMiddleware):
    """Count every HTTP answer by method, route template (not the raw path) and status."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = method_label(scope["method"])
            REQUESTS.labels(method, route, str(status)).inc()
            REQUEST_SECONDS.labels(method, route).observe(time.perf_counter() - started)


def observe_read(stages: Stages, total: float) -> None:
    """Count each stage of a read, and its total, in `engram_read_stage_seconds`."""
    for name, seconds in stages.seconds.items():
        READ_STAGE_SECONDS.labels(stages.operation, name).observe(seconds)
    READ_STAGE_SECONDS.labels(stages.operation, "total").observe(total)


def watch(*, embedder: Any, engine: Any) -> None:
    """Read the model queue and the pool of this process's app when scraped."""
    MODEL_QUEUE.set_function(lambda: embedder.pending_chunks)
    POOL_IN_USE.set_function(lambda: engine.pool.checkedout())
    POOL_SIZE.set_function(lambda: engine.pool.size())


def watch_backlog(app: FastAPI, read: BacklogReader) -> None:
    """Read the consolidation backlog's counts with `read` when scraped."""
    app.state.consolidation_backlog = read


async def _read_backlog(app: Any) -> None:
    read: BacklogReader | None = getattr(app.state, "consolidation_backlog", None)
    if read is None:
        return
    try:
        counts = await asyncio.wait_for(read(), timeout=BACKLOG_READ_SECONDS)
    except Exception:  # noqa: BLE001 - the scrape answers with the last counts read
        logger.warning("could not count the episodes awaiting consolidation", exc_info=True)
        return
    for status, count in counts.items():
        CONSOLIDATION_BACKLOG.labels(status).set(count)


def watch_embedding_backlog(app: FastAPI, read: Callable[[], Awaitable[int]]) -> None:
    """Read the count of memories stored without vectors with `read` when scraped."""
    app.state.embedding_backlog = read


async def _read_embedding_backlog(app: Any) -> None:
    read: Callable[[], Awaitable[int]] | None = getattr(app.state, "embedding_backlog", None)
    if read is None:
        return
    try:
        EMBEDDING_BACKLOG.set(await asyncio.wait_for(read(), timeout=BACKLOG_READ_SECONDS))
    except Exception:  # noqa: BLE001 - the scrape answers with the last count read
        logger.warning("could not count the memories stored without vectors", exc_info=True)


def add_metrics_route(app: FastAPI) -> None:
    """GET /metrics in the Prometheus text format (no API key, like /healthz)."""

    @app.get("/metrics", include_in_schema=False)
    async def metrics(request: Request) -> Response:
        await _read_backlog(request.app)
        await _read_embedding_backlog(request.app)
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
