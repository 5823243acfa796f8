"""Who is signed in to the console, the per-request transaction, and the checks on a change.

The browser holds only a random token in an HttpOnly, SameSite=Lax cookie; the session it
names (tenant, key, CSRF token, expiry) is kept server-side by `services/console_sessions`.
"""

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData

from app.console.render import Refused, SignInRequired
from app.core.config import Settings
from app.core.scope import scoped_transaction
from app.deps import request_scope
from app.services import actors, console_sessions

SESSION_COOKIE = "engram_console"
# Before sign-in: the double-submitted token of the sign-in form.
SIGN_IN_COOKIE = "engram_console_csrf"
CSRF_FIELD = "csrf_token"
COOKIE_PATH = "/ui"


@dataclass(frozen=True)
class Console:
    """The signed-in session as pages see it."""

    tenant_id: str
    can_write: bool
    csrf_token: str
    auth_disabled: bool
    # The only butlers the session's key reaches (empty: every butler).
    butlers: tuple[str, ...] = ()


def set_cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
    """An HttpOnly, SameSite=Lax cookie for /ui (Secure when served over HTTPS): a link
    pasted into a ticket opens signed in, while no other site can post with it."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def clear_cookie(response: Response, name: str) -> None:
    """Remove a console cookie."""
    response.delete_cookie(name, path=COOKIE_PATH, httponly=True, samesite="lax")


async def find_console(request: Request) -> Console | None:
    """The live session of the request's cookie, or None (also becomes the request's actor)."""
    settings: Settings = request.app.state.settings
    found = await console_sessions.find(
        request.app.state.sessionmaker,
        request.cookies.get(SESSION_COOKIE),
        keyless_allowed=settings.auth_disabled,
    )
    if found is None or (settings.auth_disabled and found.tenant_id != settings.default_tenant):
        return None
    actors.become(actors.for_key(found.key_id, found.butlers) if found.key_id else actors.ANONYMOUS)
    console = Console(
        found.tenant_id,
        found.access == "write",
        found.csrf_token,
        settings.auth_disabled,
        found.butlers,
    )
    request.state.console = console
    return console


async def signed_in(request: Request) -> Console:
    """The request's console session; SignInRequired without one."""
    console = await find_console(request)
    if console is None:
        raise SignInRequired()
    return console


ConsoleDep = Annotated[Console, Depends(signed_in)]


async def console_session(request: Request, console: ConsoleDep) -> AsyncIterator[AsyncSession]:
    """One transaction in the session's tenant, committed before the page is sent."""
    scope = request_scope(request.app.state.settings, console.tenant_id)
    async with scoped_transaction(request.app.state.sessionmaker, scope) as session:
        yield session


DbDep = Annotated[AsyncSession, Depends(console_session, scope="function")]


def same_token(expected: str, given: Any) -> bool:
    """True when a form's CSRF token is the expected one (constant-time)."""
    return isinstance(given, str) and bool(given) and secrets.compare_digest(expected, given)


async def checked_form(request: Request, console: ConsoleDep) -> FormData:
    """The posted form, once its CSRF token matched the session's."""
    form = await request.form()
    if not same_token(console.csrf_token, form.get(CSRF_FIELD)):
        raise Refused("the form's CSRF token is missing or stale; reload the page and retry")
    return form


async def change_form(
    console: ConsoleDep, form: Annotated[FormData, Depends(checked_form)]
) -> FormData:
    """The posted form of a change: the CSRF token matched and the key may write."""
    if not console.can_write:
        raise Refused("this session's API key is read-only")
    return form


FormDep = Annotated[FormData, Depends(checked_form)]
ChangeDep = Annotated[FormData, Depends(change_form)]
