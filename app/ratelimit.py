"""Per-caller limits: a token bucket of requests and a cap on request bytes in flight.

Past either limit the caller gets a 429 problem with `Retry-After`. The caller is the API key
(its SHA-256, never the key itself); a request without a key counts against its client
address. Only /v1 and /mcp are limited; health checks and docs never are.
"""

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.asgi import HttpMiddleware
from app.config import LimitSettings
from app.middleware import content_length, send_problem

LIMITED_PREFIXES = ("/v1", "/mcp")
MAX_CALLERS = 100_000


class BytesOverLimit(Exception):
    """A chunked body took the caller past its bytes-in-flight limit while it arrived."""


@dataclass
class _Bucket:
    tokens: float
    updated_at: float
    bytes_in_flight: int = 0


class CallerLimits:
    """The state of every caller's limits; pure bookkeeping, testable with a fake clock."""

    def __init__(self, settings: LimitSettings, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def _bucket(self, caller: str) -> _Bucket:
        bucket = self._buckets.get(caller)
        if bucket is None:
            if len(self._buckets) >= MAX_CALLERS:
                self._forget_idle()
            bucket = self._buckets[caller] = _Bucket(float(self.settings.burst), self.clock())
        return bucket

    def _forget_idle(self) -> None:
        full = float(self.settings.burst)
        for caller in [c for c, b in self._buckets.items()
                       if b.bytes_in_flight == 0 and b.tokens >= full]:
            del self._buckets[caller]

    def take_request(self, caller: str) -> float:
        """Spend one request token; 0 when allowed, else the seconds until one is free."""
        rate = self.settings.requests_per_second
        if rate <= 0:
            return 0.0
        bucket = self._bucket(caller)
        now = self.clock()
        bucket.tokens = min(float(self.settings.burst),
                            bucket.tokens + (now - bucket.updated_at) * rate)
        bucket.updated_at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / rate

    def reserve_bytes(self, caller: str, size: int) -> bool:
        """Count `size` more bytes in flight; False (nothing counted) past the limit.

        A caller with nothing in flight may always send one body (the body-size limit bounds
        it), so a limit below the largest body never locks a caller out.
        """
        limit = self.settings.bytes_in_flight
        bucket = self._bucket(caller)
        if limit > 0 and bucket.bytes_in_flight > 0 and bucket.bytes_in_flight + size > limit:
            return False
        bucket.bytes_in_flight += size
        return True

    def release_bytes(self, caller: str, size: int) -> None:
        """Give back bytes counted by `reserve_bytes`."""
        bucket = self._buckets.get(caller)
        if bucket is not None:
            bucket.bytes_in_flight = max(0, bucket.bytes_in_flight - size)


def caller_of(scope: Scope) -> str:
    """Who a request counts against: its API key's hash, else its client address."""
    for name, value in scope.get("headers", []):
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return "key:" + hashlib.sha256(value[7:].strip()).hexdigest()
        if name == b"x-api-key":
            return "key:" + hashlib.sha256(value.strip()).hexdigest()
    client = scope.get("client")
    return "addr:" + (client[0] if client else "unknown")


class RateLimitMiddleware(HttpMiddleware):
    """429 with Retry-After past a caller's request rate or bytes in flight."""

    def __init__(self, app: ASGIApp, *, limits: CallerLimits) -> None:
        super().__init__(app)
        self.limits = limits

    def applies(self, scope: Scope) -> bool:
        """HTTP requests under /v1 and /mcp."""
        return super().applies(scope) and scope.get("path", "").startswith(LIMITED_PREFIXES)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        caller = caller_of(scope)
        wait = self.limits.take_request(caller)
        if wait > 0:
            await _too_many(send, path, math.ceil(wait),
                            f"more than {self.limits.settings.requests_per_second:g} requests "
                            "per second with this API key", "requests")
            return
        declared = content_length(scope)
        reserved = declared or 0
        if not self.limits.reserve_bytes(caller, reserved):
            await _too_many(send, path, 1, "too many request bytes in flight for this API key",
                            "body")
            return
        async def counting_receive() -> Message:
            # A body without Content-Length is counted as it arrives.
            nonlocal reserved
            message = await receive()
            size = len(message.get("body", b"")) if message["type"] == "http.request" else 0
            if declared is None and size:
                if not self.limits.reserve_bytes(caller, size):
                    raise BytesOverLimit
                reserved += size
            return message

        try:
            if not await self.answered(scope, counting_receive, send, BytesOverLimit):
                await _too_many(send, path, 1,
                                "too many request bytes in flight for this API key", "body")
        finally:
            self.limits.release_bytes(caller, reserved)


async def _too_many(send: Send, path: str, retry_after: int, detail: str, field: str) -> None:
    await send_problem(send, 429, "Too many requests", detail, path, field,
                       headers=[(b"retry-after", str(max(1, retry_after)).encode())])
