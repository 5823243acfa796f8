"""Per-caller limits: a token bucket of requests and a cap on request bytes in flight.

Past either limit the caller gets a 429 problem with `Retry-After`. Who a request counts
against (`caller_of`):
- an API key this process has found live, by its SHA-256 (never the key itself);
- any other key, and the console's sign-in, by client address under the strict `unverified_*`
  limits: such a request may cost a key lookup, so a caller sending a new key each time gets
  no fresh budget, and lookups of unknown keys stay bounded per address;
- a request without a key, a console page, and every request with authentication disabled,
  by client address under the per-key limits.
An IPv6 address counts by its /64 prefix. The table of callers holds at most `max_callers`,
forgetting the least recently seen first. Only /v1, /mcp and /ui are limited; health checks,
metrics and docs never are.
"""

import hashlib
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.asgi import HttpMiddleware
from app.core.config import LimitSettings
from app.core.credentials import CHALLENGE, MISSING_KEY, UNKNOWN_KEY, api_key_of
from app.web.middleware import content_length, send_problem

LIMITED_PREFIXES = ("/v1", "/mcp", "/ui")
# Every request under these needs an API key while authentication is on.
KEYED_PREFIXES = ("/v1", "/mcp")
CONSOLE_PREFIX = "/ui"
SIGN_IN_PATH = "/ui/sign-in"
MAX_CALLERS = 100_000


class BytesOverLimit(Exception):
    """A chunked body took the caller past its bytes-in-flight limit while it arrived."""


@dataclass(frozen=True)
class Caller:
    """Whom a request counts against: `name` keys its bucket; a `strict` caller has the
    `unverified_*` rate; `who` ends the 429's detail."""

    name: str
    strict: bool = False
    who: str = "with this API key"

    @classmethod
    def for_key(cls, key_hash: str) -> "Caller":
        """A key found live, by its hash."""
        return cls("key:" + key_hash)

    @classmethod
    def address(cls, address: str) -> "Caller":
        """A client address under the per-key limits."""
        return cls("addr:" + address, who="from this address")

    @classmethod
    def unverified(cls, address: str) -> "Caller":
        """A client address sending keys not yet found live, or signing in."""
        return cls(
            "unverified:" + address,
            strict=True,
            who="from this address with API keys not yet verified",
        )


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated_at: float
    bytes_in_flight: int = 0


class CallerLimits:
    """The state of every caller's limits; pure bookkeeping, testable with a fake clock.

    Tokens are refilled when a caller is next seen, so forgetting the least recently seen
    caller needs no scan.
    """

    def __init__(
        self,
        settings: LimitSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_callers: int = MAX_CALLERS,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.max_callers = max_callers
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def clear(self) -> None:
        """Forget every caller."""
        self._buckets.clear()

    def rate(self, caller: Caller) -> tuple[float, int]:
        """The caller's sustained requests per second and burst."""
        if caller.strict:
            return (self.settings.unverified_requests_per_second, self.settings.unverified_burst)
        return self.settings.requests_per_second, self.settings.burst

    def _bucket(self, caller: Caller) -> _Bucket:
        bucket = self._buckets.get(caller.name)
        if bucket is not None:
            self._buckets.move_to_end(caller.name)
            return bucket
        if len(self._buckets) >= self.max_callers:
            self._forget_least_recent()
        bucket = self._buckets[caller.name] = _Bucket(float(self.rate(caller)[1]), self.clock())
        return bucket

    def _forget_least_recent(self) -> None:
        # A caller with a body in flight is kept (its request is being served), so at most
        # as many are passed over as there are requests in flight.
        for _ in range(len(self._buckets)):
            name, bucket = self._buckets.popitem(last=False)
            if bucket.bytes_in_flight == 0:
                return
            self._buckets[name] = bucket

    def _refill(self, caller: Caller) -> _Bucket:
        rate, burst = self.rate(caller)
        bucket = self._bucket(caller)
        now = self.clock()
        bucket.tokens = min(float(burst), bucket.tokens + (now - bucket.updated_at) * rate)
        bucket.updated_at = now
        return bucket

    def take_request(self, caller: Caller) -> float:
        """Spend one request token; 0 when allowed, else the seconds until one is free."""
        rate = self.rate(caller)[0]
        if rate <= 0:
            return 0.0
        bucket = self._refill(caller)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / rate

    def charge(self, caller: Caller) -> None:
        """Spend one token of a request already allowed on another caller's account (a key's
        first request, which its address paid for), never refusing it."""
        if self.rate(caller)[0] > 0:
            bucket = self._refill(caller)
            bucket.tokens = max(0.0, bucket.tokens - 1.0)

    def reserve_bytes(self, caller: Caller, size: int) -> bool:
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

    def release_bytes(self, caller: Caller, size: int) -> None:
        """Give back bytes counted by `reserve_bytes`."""
        bucket = self._buckets.get(caller.name)
        if bucket is not None:
            bucket.bytes_in_flight = max(0, bucket.bytes_in_flight - size)


def key_hash_of(secret: str) -> str:
    """A key's SHA-256, as the key cache and the database keep it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def client_address(scope: Scope) -> str:
    """The client's address; an IPv6 address as its /64 network, which one host may hold."""
    client = scope.get("client")
    if not client:
        return "unknown"
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return str(client[0])
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def caller_of(scope: Scope, *, known_key: Callable[[str], bool], auth_disabled: bool) -> Caller:
    """Who a request counts against (see the module's docstring); `known_key` tells whether
    a key hash was found live, without a lookup."""
    path = scope.get("path", "")
    address = client_address(scope)
    if path == SIGN_IN_PATH:
        return Caller.unverified(address)
    if auth_disabled or path.startswith(CONSOLE_PREFIX):
        return Caller.address(address)
    secret = api_key_of(scope.get("headers", []))
    if secret is None:
        return Caller.address(address)
    key_hash = key_hash_of(secret)
    return Caller.for_key(key_hash) if known_key(key_hash) else Caller.unverified(address)


def has_body(scope: Scope) -> bool:
    """Whether the request announces a body: a Content-Length above 0, or a chunked one."""
    declared = content_length(scope)
    if declared is not None:
        return declared > 0
    return any(name == b"transfer-encoding" for name, _ in scope.get("headers", []))


class RateLimitMiddleware(HttpMiddleware):
    """429 with Retry-After past a caller's request rate or bytes in flight; 401, before its
    body is read, for a request with a body under /v1 or /mcp whose API key is missing or not
    live (`live_key` looks it up), so no caller without a valid key can make the service read
    large bodies."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: CallerLimits,
        known_key: Callable[[str], bool],
        auth_disabled: bool,
        live_key: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        super().__init__(app)
        self.limits = limits
        self.known_key = known_key
        self.auth_disabled = auth_disabled
        self.live_key = live_key

    def applies(self, scope: Scope) -> bool:
        """HTTP requests under /v1, /mcp and /ui."""
        return super().applies(scope) and scope.get("path", "").startswith(LIMITED_PREFIXES)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        caller = caller_of(scope, known_key=self.known_key, auth_disabled=self.auth_disabled)
        wait = self.limits.take_request(caller)
        if wait > 0:
            await _too_many(
                send,
                path,
                math.ceil(wait),
                f"more than {self.limits.rate(caller)[0]:g} requests per second {caller.who}",
                "requests",
            )
            return
        if await self._refused_before_body(scope, caller, send):
            return
        declared = content_length(scope)
        reserved = declared or 0
        too_many_bytes = f"too many request bytes in flight {caller.who}"
        if not self.limits.reserve_bytes(caller, reserved):
            await _too_many(send, path, 1, too_many_bytes, "body")
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
                await _too_many(send, path, 1, too_many_bytes, "body")
        finally:
            self.limits.release_bytes(caller, reserved)
            if caller.strict:
                self._charge_key_found_live(scope)

    async def _refused_before_body(self, scope: Scope, caller: Caller, send: Send) -> bool:
        """Answer 401 (True) for a request with a body under /v1 or /mcp whose key is missing,
        or was not found live before and is not now."""
        path = scope.get("path", "")
        if (
            self.live_key is None
            or self.auth_disabled
            or not path.startswith(KEYED_PREFIXES)
            or not has_body(scope)
        ):
            return False
        secret = api_key_of(scope.get("headers", []))
        if secret is None:
            detail = MISSING_KEY
        elif not caller.strict or await self.live_key(secret):
            return False
        else:
            detail = UNKNOWN_KEY
        await send_problem(
            send,
            401,
            "Unauthorized",
            detail,
            path,
            "Authorization",
            headers=[(b"www-authenticate", CHALLENGE.encode())],
        )
        return True

    def _charge_key_found_live(self, scope: Scope) -> None:
        """A key found live by this request counts it, as it counts the key's later ones."""
        secret = api_key_of(scope.get("headers", []))
        if secret is not None and not self.auth_disabled:
            key_hash = key_hash_of(secret)
            if self.known_key(key_hash):
                self.limits.charge(Caller.for_key(key_hash))


async def _too_many(send: Send, path: str, retry_after: int, detail: str, field: str) -> None:
    await send_problem(
        send,
        429,
        "Too many requests",
        detail,
        path,
        field,
        headers=[(b"retry-after", str(max(1, retry_after)).encode())],
    )
