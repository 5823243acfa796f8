"""ASGI guards applied before routing: request ids and last-resort errors, request body size
and NUL characters."""

import asyncio
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.asgi import HttpMiddleware
from app.core.errors import PROBLEM_MEDIA_TYPE, REQUEST_ID_HEADER, request_id_of, unexpected_problem
from app.telemetry.heap import release_free_memory, release_free_memory_later
from app.telemetry.logs import current_request_id

# After a body this large is handled, its parsed copies have been freed; glibc keeps their
# pages until asked (a trim costs 5-200 ms, off the event loop).
RELEASE_AFTER_BODY_BYTES = 1 << 20
# Part of a large request's memory is freed only after it has been answered (13-19 MB
# after a batch of 500 texts of 49,000 characters), so the heap is trimmed again later.
RELEASE_AGAIN_AFTER_SECONDS = 1.0


class RequestIdMiddleware(HttpMiddleware):
    """Give every request an id (the client's X-Request-ID or a new one), echo it in the
    response header, and answer an exception nothing else handled with one logged problem:
    503 with Retry-After when the database cannot be reached, else 500; both carry the id."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_id = request_id_of(scope.get("headers", []))
        scope.setdefault("state", {})["request_id"] = request_id
        token = current_request_id.set(request_id)
        header = (REQUEST_ID_HEADER.lower().encode(), request_id.encode())
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            if started:
                raise
            status, body, headers = unexpected_problem(exc, scope.get("path", ""), request_id)
            await send_problem_body(
                send_with_id,
                status,
                json.dumps(body).encode(),
                [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            )
        finally:
            current_request_id.reset(token)


class BodyTooLarge(Exception):
    """The request body passed the configured limit while it was being read."""


async def send_problem(
    send: Send,
    status: int,
    title: str,
    detail: str,
    path: str,
    field: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer with an RFC 9457 problem naming `field`, before the app has run."""
    body = json.dumps(
        {
            "type": "about:blank",
            "title": title,
            "status": status,
            "detail": detail,
            "instance": path,
            "errors": [{"field": field, "message": detail}],
        }
    ).encode()
    await send_problem_body(send, status, body, headers or [])


async def send_problem_body(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    """Send an encoded problem document as the whole response, with `headers` after its own."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class InputGuardMiddleware(HttpMiddleware):
    """413 for bodies over `max_body_bytes`, also when they arrive chunked; 422 for NUL in
    the query string; 415 for form bodies (every API route takes JSON; only the web console's
    pages under /ui/ take forms).
    After a body of `RELEASE_AFTER_BODY_BYTES` or more, freed heap goes back to the OS.

    PostgreSQL text cannot hold NUL, so no query parameter may carry one to a filter;
    body fields are checked by their own models, which name the field.
    """

    def __init__(self, app: ASGIApp, *, max_body_bytes: int) -> None:
        super().__init__(app)
        self.max_body_bytes = max_body_bytes

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        query = scope.get("query_string", b"")
        if b"%00" in query.lower() or "\x00" in path:
            await send_problem(
                send, 422, "Invalid input", "NUL characters are not allowed", path, "query"
            )
            return
        declared = content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self._too_large(send, path)
            return
        if scope.get("method") not in ("POST", "PUT", "PATCH", "DELETE"):
            await self.app(scope, receive, send)
            return
        if media_type(scope) in FORM_MEDIA_TYPES and not path.startswith(FORM_PATHS):
            await send_problem(
                send,
                415,
                "Unsupported media type",
                "send the body as application/json",
                path,
                "Content-Type",
            )
            return
        try:
            body = await self._read_body(receive)
        except BodyTooLarge:
            await self._too_large(send, path)
            return
        size = len(body)
        await self.app(scope, _replay(body, receive), send)
        del body  # its pages too can go back
        if size >= RELEASE_AFTER_BODY_BYTES:
            await asyncio.to_thread(release_free_memory)
            release_free_memory_later(RELEASE_AGAIN_AFTER_SECONDS)

    async def _too_large(self, send: Send, path: str) -> None:
        await send_problem(
            send,
            413,
            "Request body too large",
            f"the body is limited to {self.max_body_bytes} bytes",
            path,
            "body",
        )

    async def _read_body(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


FORM_MEDIA_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
# The web console's pages post HTML forms.
FORM_PATHS = ("/ui/",)


def media_type(scope: Scope) -> str:
    """The request's Content-Type without parameters, lower-cased ("" when absent)."""
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            return value.decode("latin-1").split(";", 1)[0].strip().lower()
    return ""


def content_length(scope: Scope) -> int | None:
    """The request's declared Content-Length, or None when absent or malformed."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """Hand the buffered body to the app, then pass through to the server's receive."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
