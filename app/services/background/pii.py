"""The PII scrub job: configured regular expressions over run messages, matches replaced by
a salted hash so equal values stay recognisable without being readable.

The salt is `runs.pii_hash_salt` when configured; otherwise each tenant's own random salt,
made the first time one is needed and kept in the database (`pii_salts`), so it is the
same after a restart and in every process.

Each batch is read in one transaction, scrubbed and re-embedded with none open, and written
in another; a message that changed in between is left for the next run.
"""

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from app.embedding.embedder import SYSTEM_TENANT
from app.repositories import pii_salts as salt_rows
from app.repositories import runs as run_rows
from app.scope import SYSTEM, Scope
from app.services import events
from app.services.embeddings import embed_texts
from app.services.events import Event
from app.services.jobs import JobContext, JobOutcome
from app.text import preprocess_text

HASH_CHARS = 16


@dataclass(frozen=True)
class Scrubber:
    """Compiled patterns and the salt."""

    patterns: dict[str, re.Pattern[str]]
    salt: bytes

    @classmethod
    def of(cls, patterns: Mapping[str, str], salt: str) -> "Scrubber":
        """Compile `patterns` (name -> regex)."""
        return cls({name: re.compile(p) for name, p in patterns.items()}, salt.encode())

    def token(self, name: str, value: str) -> str:
        """[pii:<name>:<first 16 hex digits of sha256(salt + value)>]."""
        digest = hashlib.sha256(self.salt + value.encode()).hexdigest()[:HASH_CHARS]
        return f"[pii:{name}:{digest}]"

    def _replace(self, name: str, match: re.Match[str]) -> str:
        return self.token(name, match.group(0))

    def scrub(self, text: str) -> tuple[str, int]:
        """The text with every match replaced, and how many were."""
        total = 0
        for name, pattern in self.patterns.items():
            text, count = pattern.subn(partial(self._replace, name), text)
            total += count
        return text, total


SALT_BYTES = 32


class Scrubbers:
    """The scrubber of each tenant, its salt read (or made) once per job."""

    def __init__(self, ctx: JobContext) -> None:
        self._ctx = ctx
        self._by_tenant: dict[str, Scrubber] = {}

    async def of(self, tenant_id: str) -> Scrubber:
        """The tenant's scrubber: the configured salt, else the tenant's kept one."""
        if tenant_id not in self._by_tenant:
            settings = self._ctx.settings.runs
            if settings.pii_hash_salt is not None:
                salt = settings.pii_hash_salt.get_secret_value()
            else:
                async with self._ctx.transaction(Scope(tenant_id=tenant_id)) as session:
                    salt = await salt_rows.ensure_salt(
                        session, tenant_id=tenant_id, candidate=secrets.token_hex(SALT_BYTES))
            self._by_tenant[tenant_id] = Scrubber.of(settings.pii_patterns, salt)
        return self._by_tenant[tenant_id]


async def run_pii_scrub(ctx: JobContext, *, tenant_id: str | None,
                        rescan: bool) -> JobOutcome:
    """Scrub the tenant's run messages not yet checked (all of them with `rescan`)."""
    settings = ctx.settings.runs
    scrubbers = Scrubbers(ctx)
    checked = rewritten = matches = 0
    after = 0
    # One tenant's messages, or (a job without a tenant) every tenant's.
    scope = Scope(tenant_id=tenant_id) if tenant_id is not None else SYSTEM
    while True:
        async with ctx.transaction(scope) as session:
            batch = await run_rows.messages_to_scrub(session, tenant_id=tenant_id, after=after,
                                                     rescan=rescan,
                                                     limit=settings.pii_batch_size)
        if not batch:
            break
        after = batch[-1].position
        changed = []
        for row in batch:
            text, count = (await scrubbers.of(row.tenant_id)).scrub(row.content)
            if count:
                changed.append((row, text))
                matches += count
        async with ctx.transaction(scope) as session:
            # No SQL has run in this session yet: the model holds no connection.
            embedded = await embed_texts(session, ctx.embedder, [text for _, text in changed],
                                         tenant_id=tenant_id or SYSTEM_TENANT, bulk=True)
            done = {row.id for row, _ in changed}
            for (row, text), vector in zip(changed, embedded.vectors, strict=True):
                if await run_rows.rewrite_message(
                        session, message_id=row.id, old_content=row.content, content=text,
                        vector=vector, version_id=embedded.version_id,
                        search_text=preprocess_text(text)):
                    rewritten += 1
            await run_rows.mark_scrubbed(session, ids=[r.id for r in batch if r.id not in done])
            await events.record(session, [Event("run_messages_scrubbed", row.tenant_id, {
                "run_id": str(row.run_id), "message_id": str(row.id)}) for row, _ in changed])
        checked += len(batch)
    return JobOutcome(result={"messages_checked": checked, "messages_rewritten": rewritten,
                              "matches": matches})
