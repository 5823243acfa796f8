"""The PII scrub job: configured regular expressions over run messages, matches replaced by
a salted hash so equal values stay recognisable without being readable.

Each batch is read in one transaction, scrubbed and re-embedded with none open, and written
in another; a message that changed in between is left for the next run.
"""

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial

from app.embedding.embedder import SYSTEM_TENANT
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


async def run_pii_scrub(ctx: JobContext, *, tenant_id: str | None,
                        rescan: bool) -> JobOutcome:
    """Scrub the tenant's run messages not yet checked (all of them with `rescan`)."""
    settings = ctx.settings.runs
    if settings.pii_hash_salt is None:
        return JobOutcome(result={}, errors=["runs.pii_hash_salt is not set: no PII scrub "
                                             "without a salt"], failed=True)
    scrubber = Scrubber.of(settings.pii_patterns, settings.pii_hash_salt.get_secret_value())
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
            text, count = scrubber.scrub(row.content)
            if count:
                changed.append((row, text))
                matches += count
        async with ctx.transaction(scope) as session:
            # No SQL has run in this session yet: the model holds no connection.
            embedded = await embed_texts(session, ctx.embedder, [text for _, text in changed],
                                         tenant_id=tenant_id or SYSTEM_TENANT)
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
