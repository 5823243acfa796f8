"""Liveness and readiness probes."""

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.services.health import database_state

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    database: bool
    migrations_at_head: bool
    embedding_model: bool
    auth: Literal["required", "disabled"]


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
    body = Readiness(status="ready" if ready else "not_ready", database=database,
                     migrations_at_head=at_head, embedding_model=model, auth=auth)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)
