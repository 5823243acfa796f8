"""/ui: sign in and out, the overview, a job's page."""

import re
import secrets
import uuid

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.console.auth import (
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    ConsoleDep,
    DbDep,
    FormDep,
    clear_cookie,
    find_console,
    same_token,
    set_cookie,
)
from app.console.render import ConsoleRoute, page
from app.core.scope import SYSTEM, scoped_transaction
from app.deps import request_scope
from app.responses.events import event_out
from app.responses.jobs import job_out
from app.schemas.jobs import JobListQuery
from app.services import console_sessions, embedding_store, events, jobs
from app.services.console_sessions import SESSION_HOURS
from app.services.stats import memory_stats

router = APIRouter(prefix="/ui", route_class=ConsoleRoute, include_in_schema=False)
RECENT = 10
# Where sign-in may send the browser back to: a console page of this site with its query
# (as the browser sent it, percent-encoded), nothing else: no scheme, host, fragment,
# backslash or space.
NEXT_PAGE = re.compile(r"^/ui(/[A-Za-z0-9_\-/]*)?(\?[A-Za-z0-9_\-.~%+=&;:,/?!*'()@$]*)?$")


def _next(value: object) -> str:
    return value if isinstance(value, str) and NEXT_PAGE.match(value) else "/ui"


def _sign_in_page(request: Request, status_code: int = 200, error: str | None = None) -> Response:
    token = secrets.token_urlsafe(32)
    response = page(
        request,
        "sign_in.html",
        status_code=status_code,
        csrf_sign_in=token,
        error=error,
        next=_next(request.query_params.get("next")),
    )
    set_cookie(request, response, SIGN_IN_COOKIE, token, max_age=3600)
    return response


@router.get("")
async def home(request: Request) -> Response:
    """The overview when signed in; else the sign-in form (or, with authentication disabled,
    a session of the default tenant)."""
    console = await find_console(request)
    settings = request.app.state.settings
    if console is None and settings.auth_disabled:
        opened = await console_sessions.open_session(
            request.app.state.sessionmaker,
            tenant_id=settings.default_tenant,
            key_id=None,
            access="write",
        )
        response = RedirectResponse(_next(request.query_params.get("next")), status_code=303)
        set_cookie(request, response, SESSION_COOKIE, opened.token, SESSION_HOURS * 3600)
        return response
    if console is None:
        return _sign_in_page(request)
    return await _overview(request, console.tenant_id)


async def _overview(request: Request, tenant_id: str) -> Response:
    settings = request.app.state.settings
    # /ui answers with or without a session, so it opens its transaction itself.
    scope = request_scope(settings, tenant_id)
    async with scoped_transaction(request.app.state.sessionmaker, scope) as db:
        stats = await memory_stats(
            db,
            tenant_id=tenant_id,
            scope=None,
            consolidation_configured=settings.llm.base_url is not None,
        )
        job_rows, _ = await jobs.list_jobs(
            db, tenant_id=tenant_id, query=JobListQuery(limit=RECENT)
        )
        awaiting_vectors = await embedding_store.awaiting_vectors(db, tenant_id=tenant_id)

        event_rows, _ = await events.list_events(
            db,
            tenant_id=tenant_id,
            memory_id=None,
            event_type=None,
            since=None,
            until=None,
            limit=RECENT,
            cursor=None,
        )
    # The scheduler's jobs belong to no tenant; their kind, state and times are shown, not
    # their results, which count the rows of every tenant.
    async with scoped_transaction(request.app.state.sessionmaker, SYSTEM) as db:
        scheduled = [job_out(j) for j in await jobs.recent_scheduled(db, limit=RECENT)]
    return page(
        request,
        "overview.html",
        stats=stats,
        jobs=[job_out(j) for j in job_rows],
        scheduled=scheduled,
        events=[event_out(e) for e in event_rows],
        awaiting_vectors=awaiting_vectors,
    )


@router.post("/sign-in")
async def sign_in(request: Request) -> Response:
    """Open a session for the API key in the form (the sign-in form's own token checked)."""
    form = await request.form()
    if not same_token(request.cookies.get(SIGN_IN_COOKIE) or "", form.get("csrf_sign_in")):
        return _sign_in_page(request, 403, "The sign-in form expired; please try again.")
    secret = form.get("api_key")
    opened = await console_sessions.sign_in(
        request.app.state.sessionmaker,
        request.app.state.tenant_cache,
        secret if isinstance(secret, str) else "",
    )
    if opened is None:
        return _sign_in_page(request, 401, "That API key is unknown or revoked.")
    response = RedirectResponse(_next(form.get("next")), status_code=303)
    set_cookie(request, response, SESSION_COOKIE, opened.token, SESSION_HOURS * 3600)
    clear_cookie(response, SIGN_IN_COOKIE)
    return response


@router.post("/sign-out")
async def sign_out(request: Request, console: ConsoleDep, form: FormDep) -> Response:
    """End the session everywhere and forget the cookie."""
    await console_sessions.sign_out(
        request.app.state.sessionmaker, request.cookies.get(SESSION_COOKIE)
    )
    response = RedirectResponse("/ui", status_code=303)
    clear_cookie(response, SESSION_COOKIE)
    return response


@router.get("/jobs/{job_id}")
async def job_page(request: Request, job_id: uuid.UUID, console: ConsoleDep, db: DbDep) -> Response:
    """A job: its kind, state, parameters and result."""
    job = job_out(await jobs.get_job(db, tenant_id=console.tenant_id, job_id=job_id))
    return page(request, "job.html", job=job)
