"""Domain errors and their RFC 9457 application/problem+json rendering, registered once."""

import logging
import re
import uuid
from typing import Any, TypeVar

import asyncpg
from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.core.credentials import CHALLENGE

logger = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"
REQUEST_ID_HEADER = "X-Request-ID"
RETRY_AFTER_SECONDS = 5
_CLIENT_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")

# The failures of reaching the database, not of a statement: the socket is gone or refused,
# the server is shutting down or refusing connections, the pool has none to give.
_CONNECTION_FAILURES: tuple[type[BaseException], ...] = (
    OSError,
    TimeoutError,
    PoolTimeout,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.TooManyConnectionsError,
)


class DomainError(Exception):
    """Base of the errors a service raises; each maps to one HTTP status."""

    status_code = 400
    title = "Bad request"

    def __init_subclass__(cls, *, status_code: int, title: str, **kwargs: Any) -> None:
        """Each kind of error names its HTTP status and the problem's title."""
        super().__init_subclass__(**kwargs)
        cls.status_code = status_code
        cls.title = title

    def __init__(
        self, detail: str, *, field: str | None = None, retry_after: int | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.retry_after = retry_after


class NotFound(DomainError, status_code=404, title="Not found"):
    """The resource does not exist, or is not the caller's tenant's."""


Row = TypeVar("Row")


def found(row: Row | None, message: str, field: str | None = None) -> Row:
    """`row`, or NotFound with `message` when there is none."""
    if row is None:
        raise NotFound(message, field=field)
    return row


class Conflict(DomainError, status_code=409, title="Conflict"):
    """A valid request that conflicts with the current state."""


class InvalidInput(DomainError, status_code=422, title="Invalid input"):
    """A value the request may not hold (the field is named)."""


class PreconditionFailed(DomainError, status_code=412, title="Precondition failed"):
    """The request's If-Match does not match the current version."""


class UnsupportedMediaType(DomainError, status_code=415, title="Unsupported media type"):
    """The body is not in a media type the route takes."""


class Unauthorized(DomainError, status_code=401, title="Unauthorized"):
    """No API key, or one that is unknown or revoked."""


class Forbidden(DomainError, status_code=403, title="Forbidden"):
    """The API key may not do this."""


class TooManyRequests(DomainError, status_code=429, title="Too many requests"):
    """The caller has too much of this under way; retry after `retry_after` seconds."""


class Unavailable(DomainError, status_code=503, title="Service unavailable"):
    """The work could not be done in its time; retry after `retry_after` seconds."""


class StartupRefused(RuntimeError):
    """The service would be unsafe or broken with this configuration; it does not start."""


class ProblemError(BaseModel):
    """One invalid field."""

    field: str = Field(description="Dotted location of the field, e.g. body.permanence")
    message: str
    type: str | None = None


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    request_id: str | None = Field(
        None,
        description="The request's X-Request-ID (echoed or generated); the server log carries it.",
    )
    errors: list[ProblemError] | None = None


def request_id_of(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's X-Request-ID when it is a sane token, else a new one."""
    for name, value in headers:
        if name == b"x-request-id":
            candidate = value.decode("latin-1")
            if _CLIENT_REQUEST_ID.fullmatch(candidate):
                return candidate
    return uuid.uuid4().hex


def is_connection_failure(exc: BaseException) -> bool:
    """True when the database could not be reached (an outage), not when a statement failed."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _CONNECTION_FAILURES):
            return True
        orig = getattr(current, "orig", None)
        current = (
            orig if isinstance(orig, BaseException) else (current.__cause__ or current.__context__)
        )
    return False


# PostgreSQL's query_canceled: a statement timeout, or an operator's pg_cancel_backend.
QUERY_CANCELED = "57014"
STATEMENT_TIMEOUT = (
    "A database statement of this request ran past the statement timeout "
    "(db_statement_timeout_seconds) and was cancelled; nothing was changed. "
    "Retry later, or send less at once."
)


def is_statement_timeout(exc: BaseException) -> bool:
    """True when PostgreSQL cancelled a statement (its statement timeout)."""
    orig = getattr(exc, "orig", None)
    return getattr(orig, "sqlstate", None) == QUERY_CANCELED


def problem_body(
    status: int, title: str, detail: str | None, path: str, request_id: str | None, **extra: Any
) -> dict[str, Any]:
    """The problem document as a dict."""
    return {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": path,
        "request_id": request_id,
        **extra,
    }


def unexpected_problem(
    exc: BaseException, path: str, request_id: str | None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Log an error nothing else handled; 503 + Retry-After for a database outage or a
    statement cancelled at the request's statement timeout, else 500."""
    if is_statement_timeout(exc):
        logger.warning(
            "statement cancelled at its timeout (request_id=%s): %s",
            request_id,
            getattr(exc, "orig", exc),
        )
        return (
            503,
            problem_body(503, "Statement timeout", STATEMENT_TIMEOUT, path, request_id),
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    if is_connection_failure(exc):
        logger.error(
            "database unreachable (request_id=%s): %s: %s", request_id, type(exc).__name__, exc
        )
        return (
            503,
            problem_body(
                503,
                "Database unavailable",
                "The database cannot be reached; retry later.",
                path,
                request_id,
            ),
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    logger.error("unhandled error (request_id=%s)", request_id, exc_info=exc)
    return (
        500,
        problem_body(
            500,
            "Internal error",
            f"An unexpected error occurred (request id {request_id}).",
            path,
            request_id,
        ),
        {},
    )


def problem_response(
    status: int, title: str, detail: str | None, request: Request, **extra: Any
) -> JSONResponse:
    """Render a problem document."""
    body = problem_body(
        status,
        title,
        detail,
        request.url.path,
        request.scope.get("state", {}).get("request_id"),
        **extra,
    )
    return JSONResponse(jsonable_encoder(body), status_code=status, media_type=PROBLEM_MEDIA_TYPE)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` entries for the problem statuses a route can return."""
    return {
        status: {"model": Problem, "content": {PROBLEM_MEDIA_TYPE: {}}, "description": "Problem"}
        for status in statuses
    }


def _field_name(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(part) for part in loc)


def add_exception_handlers(app: FastAPI) -> None:
    """Map every error the service can meet to a problem+json response."""

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        extra: dict[str, Any] = {}
        if exc.field:
            extra["errors"] = [{"field": exc.field, "message": exc.detail}]
        response = problem_response(exc.status_code, exc.title, exc.detail, request, **extra)
        if isinstance(exc, Unauthorized):
            response.headers["WWW-Authenticate"] = CHALLENGE
        if exc.retry_after is not None:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {
                "field": _field_name(err.get("loc", ())),
                "message": err.get("msg", ""),
                "type": err.get("type"),
            }
            for err in exc.errors()
        ]
        fields = ", ".join(sorted({e["field"] for e in errors})) or "request"
        return problem_response(
            422, "Invalid input", f"Invalid value for: {fields}", request, errors=errors
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = problem_response(
            exc.status_code, _title(exc.status_code), str(exc.detail), request
        )
        if exc.headers:
            response.headers.update(exc.headers)
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(_allowed_methods(request))
        return response

    @app.exception_handler(IntegrityError)
    async def _integrity(request: Request, exc: IntegrityError) -> JSONResponse:
        logger.info("integrity error: %s", exc.orig)
        return problem_response(409, "Conflict", "The change conflicts with stored data.", request)

    @app.exception_handler(DataError)
    async def _data(request: Request, exc: DataError) -> JSONResponse:
        logger.info("rejected value: %s", exc.orig)
        return problem_response(
            422, "Invalid input", "A value is out of range for storage.", request
        )

    @app.exception_handler(RecursionError)
    async def _too_deep(request: Request, exc: RecursionError) -> JSONResponse:
        return problem_response(
            422,
            "Invalid input",
            "The JSON body is nested too deeply.",
            request,
            errors=[{"field": "body", "message": "nested too deeply"}],
        )

    @app.exception_handler(DBAPIError)
    async def _database(request: Request, exc: DBAPIError) -> JSONResponse:
        if is_row_policy_refusal(exc):
            return problem_response(403, "Forbidden", ROW_POLICY_REFUSAL, request)
        return _unexpected_response(request, exc)

    # Anything else (OSError of a refused connection, a bug) is caught by RequestIdMiddleware,
    # which answers once and logs once instead of letting the server log a second traceback.


# A write row-level security refused: a key limited to butlers aimed outside them.
ROW_POLICY_REFUSAL = "this API key may not write there: it is outside the butlers it is limited to"
INSUFFICIENT_PRIVILEGE = "42501"


def is_row_policy_refusal(exc: BaseException) -> bool:
    """True for PostgreSQL refusing a row by a row-level security policy."""
    orig = getattr(exc, "orig", None)
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return code == INSUFFICIENT_PRIVILEGE and "row-level security" in str(orig)


def _unexpected_response(request: Request, exc: BaseException) -> JSONResponse:
    status, body, headers = unexpected_problem(
        exc, request.url.path, request.scope.get("state", {}).get("request_id")
    )
    return JSONResponse(
        jsonable_encoder(body), status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE
    )


def _allowed_methods(request: Request) -> list[str]:
    """Every documented method of the path's most specific matching template (Starlette lists
    one route's): `/v1/episodes/batch` is its own resource, not `/v1/episodes/{episode_id}`."""
    by_template: dict[str, set[str]] = {}
    pending: list[Any] = list(request.app.router.routes)
    while pending:
        route = pending.pop()
        # FastAPI keeps an included router as one entry holding its routes.
        if hasattr(route, "effective_candidates"):
            pending.extend(route.effective_candidates())
            continue
        route_methods = getattr(route, "methods", None)
        if route_methods and route.matches(request.scope)[0] != Match.NONE:
            by_template.setdefault(route.path_format, set()).update(route_methods)
    if not by_template:
        return []
    specific = min(by_template, key=lambda template: (template.count("{"), template))
    return sorted(by_template[specific] - {"HEAD"})


def _title(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
