"""Liveness and readiness probes."""

import asyncio
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from app.services.health import database_state
from app.telemetry.metrics import BACKLOG_READ_SECONDS

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"]


class ReplicaReadiness(BaseModel):
    name: str = Field(description="The replica's URL without its password.")
    state: Literal["up", "down", "lagging", "unsafe"] = Field(
        description="up: serves reads; down: unreachable; lagging: replay further behind "
        "than max_lag_seconds; unsafe: its role bypasses row-level security."
    )
    lag_seconds: float | None = Field(description="Replay lag at the last check.")
    error: str | None = Field(description="Why it is skipped, when it is.")


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    database: bool
    migrations_at_head: bool
    embedding_model: bool
    auth: Literal["required", "disabled"]
    embedding_backlog: int | None = Field(
        None,
        description="Memories stored without vectors because the remote embedding "
        "model failed or was slow, waiting to be embedded ('openai' backend; null otherwise). "
        "They are found by keyword meanwhile; it does not decide readiness.",
    )
    replicas: list[ReplicaReadiness] = Field(
        default_factory=list,
        description="Each read replica; reads skip those not up and "
        "use the primary when none is, so they do not decide readiness.",
    )


@router.get("/healthz", response_model=Health, summary="The process is up")
async def healthz() -> Health:
    """Answers as long as the process serves HTTP."""
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="Database reachable, schema at head, model loadable",
    responses={503: {"model": Readiness, "description": "Not ready"}},
)
async def readyz(request: Request) -> JSONResponse:
    """200 when every dependency is usable, 503 with the failing parts otherwise."""
    state = await database_state(request.app.state.db_engine)
    database, at_head = state.reachable, state.at_head
    model = request.app.state.embedder.is_loaded
    ready = database and at_head and model
    auth = "disabled" if request.app.state.settings.auth_disabled else "required"
    replicas = [ReplicaReadiness.model_validate(r) for r in request.app.state.replicas.status()]
    backlog = await embedding_backlog(request) if database and at_head else None
    body = Readiness(
        status="ready" if ready else "not_ready",
        database=database,
        migrations_at_head=at_head,
        embedding_model=model,
        auth=auth,
        embedding_backlog=backlog,
        replicas=replicas,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


async def embedding_backlog(request: Request) -> int | None:
    """The count of memories stored without vectors, when the app keeps one and it can be
    read in time."""
    count = getattr(request.app.state, "embedding_backlog", None)
    if count is None:
        return None
    try:
        return int(await asyncio.wait_for(count(), timeout=BACKLOG_READ_SECONDS))
    except Exception:  # noqa: BLE001 - the probe answers without the count
        return None
