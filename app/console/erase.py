"""/ui/erase: erase by subject, entity or session, after a page naming what will go."""

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.console.auth import ChangeDep, ConsoleDep, DbDep
from app.console.render import ConsoleRoute, page
from app.core.errors import InvalidInput
from app.schemas.erasures import ErasureCreate
from app.services import erasures
from app.services.erasures import PREVIEW_LIMIT, preview_erasure

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
SELECTORS = {
    "subject": "Facts about a subject (every version)",
    "entity_id": "An entity, what was merged into it, and all their facts",
    "session_id": "A session's episodes and what was consolidated from them",
}


def erasure_request(selector: object, value: object) -> ErasureCreate:
    """The API's erasure request for one of the console's selectors."""
    if selector not in SELECTORS:
        raise InvalidInput(f"choose one of {', '.join(SELECTORS)}", field="selector")
    text = value.strip() if isinstance(value, str) else ""
    return ErasureCreate.model_validate({str(selector): text})


@router.get("/erase")
async def erase_page(request: Request, console: ConsoleDep, db: DbDep) -> Response:
    """Choose what to erase; with a selector, the records it would delete."""
    params = request.query_params
    preview = None
    if params.get("value", "").strip():
        wanted = erasure_request(params.get("selector"), params.get("value"))
        preview = await preview_erasure(db, tenant_id=console.tenant_id, request=wanted)
    return page(
        request,
        "erase.html",
        selectors=SELECTORS,
        preview=preview,
        selector=params.get("selector", "subject"),
        value=params.get("value", ""),
        limit=PREVIEW_LIMIT,
    )


@router.post("/erase")
async def erase(form: ChangeDep, console: ConsoleDep, db: DbDep) -> Response:
    """Queue the erasure job (as POST /v1/erasures) and show it."""
    wanted = erasure_request(form.get("selector"), form.get("value"))
    job = await erasures.request_erasure(db, tenant_id=console.tenant_id, request=wanted)
    return RedirectResponse(f"/ui/jobs/{job.id}?done=erasure-queued", status_code=303)
