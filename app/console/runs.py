"""/ui/runs: task runs with their messages and feedback; /ui/agents: an agent's view of a
ledger (recent, salient, reflections)."""

import uuid
from typing import Any

from fastapi import APIRouter, Request, Response

from app.console.auth import ConsoleDep, DbDep
from app.console.render import ConsoleRoute, page
from app.core.errors import InvalidInput
from app.deps import EmbedderDep, SettingsDep
from app.responses.ledger import agent_context_out
from app.responses.runs import run_detail_out, run_out
from app.schemas.common import MAX_NAME_CHARS
from app.schemas.ledger import AgentContextRequest
from app.schemas.runs import RunListQuery
from app.services import ledger, runs

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
LISTED = 100


@router.get("/runs")
async def run_list(request: Request, console: ConsoleDep, db: DbDep) -> Response:
    """Runs newest first, optionally of one task."""
    task_id = request.query_params.get("task_id", "").strip() or None
    # The console's search box takes any text: a task_id beyond the API's bound finds nothing.
    query = RunListQuery.model_construct(task_id=task_id, limit=LISTED)
    rows, _ = await runs.list_runs(db, tenant_id=console.tenant_id, query=query)

    return page(request, "runs.html", rows=[run_out(row) for row in rows], task_id=task_id)


@router.get("/runs/{run_id}")
async def run_page(request: Request, run_id: uuid.UUID, console: ConsoleDep, db: DbDep) -> Response:
    """A run with its messages and feedback."""
    detail = run_detail_out(await runs.get_run(db, tenant_id=console.tenant_id, run_id=run_id))
    return page(request, "run.html", run=detail)


def _name(value: Any, field: str) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if not 0 < len(text) <= MAX_NAME_CHARS:
        raise InvalidInput(f"{field} must be 1-{MAX_NAME_CHARS} characters", field=field)
    return text


@router.get("/agents")
async def agent_page(
    request: Request, console: ConsoleDep, db: DbDep, embedder: EmbedderDep, settings: SettingsDep
) -> Response:
    """What an agent sees of a ledger at a turn: recent window, salient events, reflections."""
    params = request.query_params
    view = None
    if params.get("ledger") and params.get("agent_id"):
        try:
            turn = int(params.get("turn") or 0)
        except ValueError:
            raise InvalidInput("turn must be a whole number", field="turn") from None
        wanted = AgentContextRequest.model_validate(
            {"turn": turn, "query": params.get("query", "")}
        )
        view = agent_context_out(
            await ledger.agent_context(
                db,
                tenant_id=console.tenant_id,
                embedder=embedder,
                settings=settings,
                ledger=_name(params.get("ledger"), "ledger"),
                agent_id=_name(params.get("agent_id"), "agent_id"),
                request=wanted,
            )
        )
    return page(request, "agents.html", view=view, params=params)
