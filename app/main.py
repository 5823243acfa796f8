"""create_app(): lifespan, routers and exception handlers."""

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncEngine

from app.console import mount_console
from app.core.config import Settings
from app.core.errors import StartupRefused, add_exception_handlers, problem_responses
from app.core.scope import SYSTEM, scoped_transaction
from app.embedding import Embedder, get_embedder
from app.mcp.server import McpMount
from app.postgres import migrations
from app.postgres.db import (
    AppConnection,
    EmbeddedSupervisor,
    app_connection,
    check_app_role,
    check_extensions,
    create_engine,
    make_sessionmaker,
    release_embedded_postgres,
    resolve_database_url,
)
from app.postgres.replicas import build_replicas
from app.reads import ReplicaRetryMiddleware
from app.retrieval.user_reranker import UserReranker, open_reranker
from app.routers import ROUTERS
from app.services import api_keys, embedding_store, stats
from app.services.export_snapshot import ExportSlots
from app.services.jobs import JobContext
from app.services.planner_statistics import PostingsStatistics
from app.services.references import ReferenceQueue
from app.telemetry import metrics
from app.telemetry.heap import share_one_malloc_arena
from app.telemetry.tracing import configure_tracing
from app.web.docs import mount_docs
from app.web.hosts import LoopbackHostMiddleware, is_loopback
from app.web.middleware import InputGuardMiddleware, RequestIdMiddleware
from app.web.query_guard import reject_unknown_query_params
from app.web.ratelimit import CallerLimits, RateLimitMiddleware
from app.worker.reembed import EmbeddingBacklog, unembedded_count
from app.worker.worker import BackgroundJobs

logger = logging.getLogger("engram")

DESCRIPTION = """
Engram stores and retrieves long-term memories for AI agents.

* **episodes**: raw observations from a session, short-lived (7 days by default);
* **facts**: subject/predicate/content knowledge whose confidence decays by permanence and
  which a newer fact with the same key supersedes;
* **rules**: behavioural guidance whose maturity follows helpful/harmful feedback.

* **entities** and **links**: who and what memories are about, and where they came from;
* **search**, **recall** and **context**: hybrid retrieval for agents' prompts;
* **jobs**: consolidation of episodes into facts and rules, decay sweeps, cleanup.

Every `/v1` call needs an API key (`Authorization: Bearer <key>` or `X-API-Key`), minted
with `engram keys create --tenant NAME`; the key decides the tenant, and a tenant never
sees another's memories. Errors are RFC 9457 `application/problem+json` documents;
`errors[].field` names the field.
"""

V1_RESPONSES: dict[int | str, dict[str, Any]] = {
    **problem_responses(400, 401),
    403: {
        **problem_responses(403)[403],
        "description": "The API key is read-only (`engram keys create --read-only`) and "
        "the operation changes data, or it is limited to butlers "
        "(`--butlers`) and the operation writes for another butler or the "
        "global scope, changes a run, or works on every butler",
    },
    429: {
        **problem_responses(429)[429],
        "description": "Too many requests or request bytes in flight for this API key "
        "(for a key this process has not yet found live, or none, from "
        "this client address); retry after the seconds in the Retry-After "
        "header",
        "headers": {
            "Retry-After": {
                "description": "Seconds to wait before retrying",
                "schema": {"type": "integer"},
            }
        },
    },
}


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Connect to PostgreSQL, apply migrations, load the embedding model; dispose at exit."""
    settings: Settings = app.state.settings
    refuse_unsafe_binding(settings)
    share_one_malloc_arena()
    started = phase = time.perf_counter()
    owner_url = await resolve_database_url(settings)
    owner_engine, phase = await _open_owner_engine(settings, owner_url, phase)
    connection = await app_connection(settings, owner_engine, owner_url)
    db_engine = await _open_app_engine(settings, connection)
    embedder, reranker = await _load_models(settings, owner_engine, phase)
    app.state.db_engine = db_engine
    app.state.owner_engine = owner_engine
    app.state.sessionmaker = make_sessionmaker(db_engine)
    await _start_replicas(app, settings, db_engine, connection.role)
    app.state.embedder = embedder
    app.state.reranker = reranker
    metrics.watch(embedder=embedder, engine=db_engine)
    metrics.watch_backlog(app, partial(stats.consolidation_backlog, app.state.sessionmaker))
    background, backlog = _start_background_work(app, settings, embedder)
    _warn_if_consolidation_is_off(settings)
    supervisor = EmbeddedSupervisor.start_for(settings)
    postings_statistics = PostingsStatistics(owner_engine)
    postings_statistics.start()
    log_phase("engram ready", started)
    try:
        async with app.state.mcp.running():
            yield
    finally:
        await postings_statistics.stop()
        await backlog.stop()
        await background.stop()
        if reranker is not None:
            await reranker.aclose()
        await app.state.references.stop()
        await app.state.replicas.stop()
        await supervisor.stop()
        await db_engine.dispose()
        await owner_engine.dispose()
        await asyncio.to_thread(release_embedded_postgres, settings)


async def _open_owner_engine(
    settings: Settings, owner_url: str, phase: float
) -> tuple[AsyncEngine, float]:
    """The owner's engine, its extensions checked and the schema migrated; the time now."""
    # The owner runs migrations (and the tests' arrangements); requests and jobs use the
    # app role, which row-level security binds.
    owner_engine = create_engine(owner_url, pool_size=2)
    await check_extensions(owner_engine)
    phase = log_phase("database ready", phase)
    if settings.migrate_on_start:
        await migrations.upgrade(owner_engine)
        phase = log_phase("migrations", phase)
    if await migrations.is_at_head(owner_engine):
        await migrations.restore_leakproof_marks(owner_engine)
    return owner_engine, phase


async def _open_app_engine(settings: Settings, connection: AppConnection) -> AsyncEngine:
    """The engine requests and jobs use; refuses a public listener while no API key is live."""
    db_engine = create_engine(
        connection.url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        role=connection.role,
        statement_cache_size=settings.db_statement_cache_size,
        multi_shard_statements=settings.multi_shard_statements,
    )
    await check_app_role(db_engine)
    await refuse_public_binding_without_keys(settings, db_engine)
    return db_engine


async def _load_models(
    settings: Settings, owner_engine: AsyncEngine, phase: float
) -> tuple[Embedder, UserReranker | None]:
    """Load the embedding model (the columns fitted to its dimensions) and the reranker."""
    embedder = get_embedder(settings)
    await embedding_store.recall_dimensions(make_sessionmaker(owner_engine), embedder)
    await asyncio.to_thread(embedder.load)
    phase = log_phase("model loaded", phase)
    reranker = open_reranker(settings.reranker)
    if reranker is not None:
        await asyncio.to_thread(reranker.load)
        log_phase(f"reranker ({settings.reranker.kind}) ready", phase)
    if await embedding_store.fit_to_model(make_sessionmaker(owner_engine), embedder):
        log_phase(f"embedding columns given the model's {embedder.dimensions} dimensions", phase)
    return embedder, reranker


async def _start_replicas(
    app: FastAPI, settings: Settings, db_engine: AsyncEngine, role: str | None
) -> None:
    """Start the read replicas and, when there are any, the queue of references to flush."""
    app.state.replicas = build_replicas(
        settings.replica_database_urls,
        settings.replicas,
        primary=db_engine,
        role=role,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        statement_cache_size=settings.db_statement_cache_size,
    )
    await app.state.replicas.start()
    app.state.references = ReferenceQueue(
        app.state.sessionmaker, settings.replicas.reference_flush_seconds
    )
    app.state.references.start()


def _start_background_work(
    app: FastAPI, settings: Settings, embedder: Embedder
) -> tuple[BackgroundJobs, EmbeddingBacklog]:
    """Start the background jobs and the embedding backlog (which works for a remote model)."""
    background = BackgroundJobs(JobContext(app.state.sessionmaker, settings, embedder))
    background.start()
    backlog = EmbeddingBacklog(app.state.sessionmaker, embedder, settings.embedding_backlog_seconds)
    if embedder.backend_name == "openai":
        # Only a remote model leaves memories without vectors (services/embeddings).
        metrics.watch_embedding_backlog(app, partial(unembedded_count, app.state.sessionmaker))
        backlog.start()
    return background, backlog


def _warn_if_consolidation_is_off(settings: Settings) -> None:
    """Say loudly that episodes are never consolidated while no LLM is configured."""
    if settings.llm.base_url is None:
        logger.warning(
            "CONSOLIDATION IS NOT CONFIGURED ([llm] base_url is unset): episodes are "
            "never turned into facts or rules, and cleanup deletes expired "
            "episodes unconsolidated once unconsolidated_grace_days "
            f"({settings.unconsolidated_grace_days:g}) have passed."
        )


def log_phase(done: str, since: float) -> float:
    """Log one start-up phase with its duration ("migrations in 0.4 s"); return the time now."""
    now = time.perf_counter()
    logger.info("%s in %.1f s", done, now - since)
    return now


def refuse_unsafe_binding(settings: Settings) -> None:
    """Authentication may be off only on a loopback address, and then it says so loudly."""
    if not settings.auth_disabled:
        return
    if not is_loopback(settings.host):
        raise StartupRefused(
            f"authentication is disabled but the service would listen on {settings.host}; "
            "disable authentication only on a loopback address (127.0.0.1, ::1, localhost)"
        )
    logger.warning(
        "AUTHENTICATION IS DISABLED: every request is served as tenant %r. "
        "Use this only on this machine (listening on %s).",
        settings.default_tenant,
        settings.host,
    )


async def refuse_public_binding_without_keys(settings: Settings, db_engine: AsyncEngine) -> None:
    """A non-loopback listener with authentication on needs at least one live key."""
    if settings.auth_disabled or is_loopback(settings.host):
        return
    async with scoped_transaction(make_sessionmaker(db_engine), SYSTEM) as session:
        live = await api_keys.count_live_keys(session)
    if live == 0:
        raise StartupRefused(
            f"no API keys exist and the service would listen on {settings.host}: create one "
            "with `engram keys create --tenant NAME` first"
        )


def operation_id(route: APIRoute) -> str:
    """A route's OpenAPI operationId: its endpoint function's name (unique, snake_case)."""
    return route.name


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the application; nothing connects until the lifespan starts."""
    app = FastAPI(
        title="Engram",
        version="0.1.0",
        summary="Long-term memory service for AI agents.",
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        dependencies=[Depends(reject_unknown_query_params)],
        docs_url=None,
        redoc_url=None,
    )
    mount_docs(app, app.title)
    metrics.add_metrics_route(app)
    app.state.settings = settings = settings or Settings()
    add_exception_handlers(app)
    app.state.export_slots = ExportSlots()
    for router in ROUTERS:
        public = router.prefix == "" or not router.prefix.startswith("/v1")
        app.include_router(router, responses=None if public else V1_RESPONSES)
    # MCP at /mcp: the same services as a second front door (not part of the OpenAPI document).
    app.state.mcp = McpMount(settings, app.version)
    app.router.routes.append(app.state.mcp.route)
    if settings.replica_database_urls:
        app.add_middleware(ReplicaRetryMiddleware)
    # The web console at /ui: a third front door (not part of the OpenAPI document).
    mount_console(app)
    app.add_middleware(InputGuardMiddleware, max_body_bytes=settings.max_body_bytes)
    # Added last, so it runs first: a throttled request is refused before its body is read.
    # The key cache tells the limits which keys were found live.
    app.state.tenant_cache = api_keys.TenantCache(settings.api_key_cache_seconds)
    app.state.caller_limits = CallerLimits(settings.limits)

    async def live_key(secret: str) -> bool:
        owner = await api_keys.resolve_key(app.state.sessionmaker, app.state.tenant_cache, secret)
        return owner is not None

    app.add_middleware(
        RateLimitMiddleware,
        limits=app.state.caller_limits,
        known_key=app.state.tenant_cache.knows,
        auth_disabled=settings.auth_disabled,
        live_key=live_key,
    )
    if settings.auth_disabled:
        app.add_middleware(LoopbackHostMiddleware)
    app.add_middleware(metrics.MetricsMiddleware)
    # Outermost: every answer, a 429 included, carries the request id.
    app.add_middleware(RequestIdMiddleware)
    document_configured_limits(app, settings)
    configure_tracing(app, settings.otlp_endpoint)
    return app


def document_configured_limits(app: FastAPI, settings: Settings) -> None:
    """Make the OpenAPI document state the limits this instance enforces from settings."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schemas = build()["components"]["schemas"]
            schemas["EpisodeBatchCreate"]["properties"]["items"]["maxItems"] = (
                settings.max_batch_size
            )
        return app.openapi_schema or build()

    app.openapi = openapi  # type: ignore[method-assign]
