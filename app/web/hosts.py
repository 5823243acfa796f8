"""Loopback names, and the guard that serves only them while authentication is disabled.

Without keys, anything that reaches the port acts as the default tenant. A web page whose own
name the attacker rebinds to 127.0.0.1 (DNS rebinding) reaches it from the user's browser,
but the browser still sends that name as Host, and its Origin with a script's requests.
"""

import ipaddress
from urllib.parse import urlsplit

from starlette.types import Receive, Scope, Send

from app.core.asgi import HttpMiddleware
from app.web.middleware import send_problem


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(authority: str) -> str:
    """The name of a Host header's `name[:port]` (an IPv6 address without its brackets),
    lower-cased; "" when malformed."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        name, bracket, rest = authority[1:].partition("]")
        return name if bracket and (not rest or _is_port(rest)) else ""
    name, colon, port = authority.partition(":")
    return name if not colon or port.isdigit() else ""


def _is_port(rest: str) -> bool:
    return rest.startswith(":") and rest[1:].isdigit()


def is_loopback_origin(origin: str) -> bool:
    """True for an http(s) origin on a loopback name."""
    try:
        parts = urlsplit(origin)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")


class LoopbackHostMiddleware(HttpMiddleware):
    """421 for a request whose Host is not a loopback name (localhost, 127.0.0.0/8, [::1],
    with or without a port); 403 for one sent by a page of another origin."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(reversed(scope.get("headers", [])))
        path = scope.get("path", "")
        host = headers.get(b"host", b"").decode("latin-1")
        if not is_loopback(host_name(host)):
            await send_problem(
                send,
                421,
                "Misdirected request",
                "authentication is disabled, so only requests to localhost, "
                "127.0.0.1 or [::1] are served",
                path,
                "Host",
            )
            return
        origin = headers.get(b"origin")
        if origin is not None and not is_loopback_origin(origin.decode("latin-1")):
            await send_problem(
                send,
                403,
                "Forbidden",
                "authentication is disabled, so pages of other origins may not call this service",
                path,
                "Origin",
            )
            return
        await self.app(scope, receive, send)
