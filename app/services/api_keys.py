"""API keys: minting (the secret is shown once), hashing and resolving to a tenant."""

import hashlib
import re
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.core.constants import GLOBAL_SCOPE
from app.core.errors import InvalidInput
from app.core.scope import SYSTEM, scoped_transaction
from app.models.api_keys import ApiKey
from app.repositories import api_keys as api_key_rows
from app.schemas.common import MAX_NAME_CHARS

KEY_PREFIX = "egk_"
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# The butlers a key may be limited to travel as one comma-separated setting (app/core/rls.py).
MAX_KEY_BUTLERS = 64


@dataclass(frozen=True)
class KeyOwner:
    """What a live key resolves to: its tenant, its own id, whether it may write, and the
    butlers it is limited to (empty: every butler)."""

    tenant_id: str
    key_id: uuid.UUID
    access: str = "write"
    butlers: tuple[str, ...] = ()


@dataclass(frozen=True)
class MintedKey:
    """A freshly created key: `secret` is never stored and cannot be shown again."""

    record: ApiKey
    secret: str


def hash_key(secret: str) -> str:
    """SHA-256 of the key; keys are 256-bit random, so a slow hash would add nothing."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def key_butlers(names: list[str] | None) -> list[str] | None:
    """The butlers a new key is limited to, checked and without repeats; None: unlimited."""
    if names is None:
        return None
    butlers = list(dict.fromkeys(names))
    if not butlers:
        raise InvalidInput("name at least one butler, or leave the key unlimited", field="butlers")
    if len(butlers) > MAX_KEY_BUTLERS:
        raise InvalidInput(
            f"a key may be limited to at most {MAX_KEY_BUTLERS} butlers", field="butlers"
        )
    for butler in butlers:
        if (
            not butler
            or len(butler) > MAX_NAME_CHARS
            or "," in butler
            or "\x00" in butler
            or butler != butler.strip()
        ):
            raise InvalidInput(
                f"invalid butler name {butler!r}: 1-{MAX_NAME_CHARS} "
                "characters, no comma, no surrounding spaces",
                field="butlers",
            )
    if GLOBAL_SCOPE in butlers:
        raise InvalidInput(
            f"'{GLOBAL_SCOPE}' is shared by every key; it is not a butler", field="butlers"
        )
    return butlers


async def create_key(
    session: AsyncSession,
    *,
    tenant_id: str,
    name: str | None = None,
    access: str = "write",
    butlers: list[str] | None = None,
) -> MintedKey:
    """Mint a key for `tenant_id` and store its hash; `access` "read" may not change data;
    `butlers` limits it to those butlers' memories (and the global ones)."""
    if not TENANT_PATTERN.match(tenant_id):
        raise InvalidInput("tenant must be 1-64 letters, digits, '_', '.' or '-'", field="tenant")
    limited_to = key_butlers(butlers)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    record = await api_key_rows.insert(
        session,
        tenant_id=tenant_id,
        name=name,
        key_prefix=secret[:12],
        key_hash=hash_key(secret),
        access=access,
        butlers=limited_to,
    )
    return MintedKey(record, secret)


class TenantCache:
    """Keys (their owners) resolved in the last `ttl_seconds`, so most requests need no lookup.

    A revoked key therefore keeps working for at most `ttl_seconds` in each process. Only
    known keys are cached; unknown ones are looked up every time. The oldest entries go first
    past `max_entries`.

    Apart from that, it remembers which key hashes were live at their last lookup (`knows`,
    at most `max_known`, the least recently seen going first), so the rate limits can count
    a request against its key before any lookup.
    """

    def __init__(
        self,
        ttl_seconds: float,
        *,
        max_entries: int = 10_000,
        max_known: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_seconds = ttl_seconds
        self.max_entries = max_entries
        self.max_known = max_known
        self.clock = clock
        self._entries: OrderedDict[str, tuple[KeyOwner, float]] = OrderedDict()
        self._known: OrderedDict[str, None] = OrderedDict()

    def knows(self, key_hash: str) -> bool:
        """Whether the key was live at its last lookup in this process (no lookup here)."""
        if key_hash not in self._known:
            return False
        self._known.move_to_end(key_hash)
        return True

    def forget(self, key_hash: str) -> None:
        """A lookup found the key unknown or revoked."""
        self._known.pop(key_hash, None)
        self._entries.pop(key_hash, None)

    def get(self, key_hash: str) -> KeyOwner | None:
        """The cached owner of a key hash, or None when absent or stale."""
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        owner, expires_at = entry
        if self.clock() >= expires_at:
            del self._entries[key_hash]
            return None
        return owner

    def put(self, key_hash: str, owner: KeyOwner) -> None:
        """Remember a key's owner for `ttl_seconds`, and that it was live."""
        self._known[key_hash] = None
        self._known.move_to_end(key_hash)
        while len(self._known) > self.max_known:
            self._known.popitem(last=False)
        if self.ttl_seconds <= 0:
            return
        self._entries[key_hash] = (owner, self.clock() + self.ttl_seconds)
        self._entries.move_to_end(key_hash)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


async def resolve_key(
    sessionmaker: async_sessionmaker[AsyncSession], cache: TenantCache, secret: str
) -> KeyOwner | None:
    """The key's tenant and id, from the cache or from a short transaction of its own.

    The request's own transaction is not used, so a request that then waits for the model
    holds no database connection meanwhile.
    """
    if not secret or len(secret) > 256:
        return None
    key_hash = hash_key(secret)
    if (owner := cache.get(key_hash)) is not None:
        return owner
    # System scope: the key is what tells the tenant, so the lookup spans every tenant.
    async with scoped_transaction(sessionmaker, SYSTEM) as session:
        row = await api_key_rows.owner_for_hash(session, key_hash)
    if row is None:
        cache.forget(key_hash)
        return None
    owner = KeyOwner(tenant_id=row[0], key_id=row[1], access=row[2], butlers=tuple(row[3] or ()))
    cache.put(key_hash, owner)
    return owner


async def count_live_keys(session: AsyncSession) -> int:
    """How many keys, of any tenant, are not revoked."""
    return await api_key_rows.count_live(session)


async def list_keys(session: AsyncSession, *, tenant_id: str | None) -> list[ApiKey]:
    """Every key, or the tenant's, oldest first (never the secrets)."""
    return await api_key_rows.list_keys(session, tenant_id=tenant_id)


async def revoke_key(session: AsyncSession, *, key_id: uuid.UUID) -> bool:
    """Revoke a live key; False when there is no live key with that id."""
    return await api_key_rows.revoke(session, key_id)
