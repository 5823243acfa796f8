"""Pages from the Jinja2 templates (autoescaped), and the route class that turns a refused
request into a page instead of a JSON problem."""

import json
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import ValidationError

from app.core.errors import DomainError

TEMPLATES = Environment(
    loader=PackageLoader("app.console", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _number(value: float | None, places: int = 3) -> str:
    return "" if value is None else f"{value:.{places}f}"


def _as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


TEMPLATES.filters.update(when=_when, number=_number, as_json=_as_json)


class SignInRequired(Exception):
    """No live console session: the browser is sent to the sign-in page, which returns it
    to the page it asked for."""


class Refused(Exception):
    """A change the session may not make (no CSRF token, or a read-only key): 403."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render a template with the console's common context (who is signed in, the CSRF
    token, a notice carried by `?done=`)."""
    values = {
        "request": request,
        "console": getattr(request.state, "console", None),
        "done": request.query_params.get("done"),
        **context,
    }
    html = TEMPLATES.get_template(template).render(values)
    return HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)


# The console loads nothing from elsewhere and runs no script.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def error_page(request: Request, status_code: int, title: str, detail: str) -> HTMLResponse:
    """The page shown for a refused or failed request."""
    return page(request, "error.html", status_code=status_code, title=title, detail=detail)


def _validation_text(errors: list[Any]) -> str:
    parts = []
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ()) if part not in ("body",))
        parts.append(f"{where}: {error.get('msg', '')}" if where else str(error.get("msg")))
    return "; ".join(parts)


class ConsoleRoute(APIRoute):
    """An APIRoute whose refusals render as console pages (404, 409, 422, 403) and whose
    missing session redirects to the sign-in page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                target = "/ui"
                if request.method == "GET" and request.url.path != "/ui":
                    page_query = request.url.query
                    back = request.url.path + (f"?{page_query}" if page_query else "")
                    target += "?" + urlencode({"next": back})
                return RedirectResponse(target, status_code=303)
            except Refused as refused:
                return error_page(request, 403, "Not allowed", refused.detail)
            except DomainError as error:
                return error_page(request, error.status_code, error.title, error.detail)
            except RequestValidationError as error:
                path_ids = any(e.get("loc", ("",))[0] == "path" for e in error.errors())
                if path_ids:
                    return error_page(request, 404, "Not found", "No such page.")
                return error_page(
                    request, 422, "Invalid input", _validation_text(list(error.errors()))
                )
            except ValidationError as error:
                return error_page(
                    request, 422, "Invalid input", _validation_text(list(error.errors()))
                )

        return handle
