"""The PII scrub job: configured regular expressions over every text a person's data can
reach (run messages, runs' summary and meta, feedback rationales, rules, and episodes'
content and metadata), each
match replaced by a salted hash so equal values stay recognisable without being readable.
The scheduler queues one for every tenant each `jobs.pii_scrub_interval_hours`.

The salt is `runs.pii_hash_salt` when configured; otherwise each tenant's own random salt,
made the first time one is needed and kept in the database (`pii_salts`), so it is the
same after a restart and in every process.

Each batch is read in one transaction, scrubbed (in a thread of its own, so the event loop
serves requests meanwhile) and re-embedded with none open, and written in another; a row that
changed in between is left for the next run. A rewritten rule or
episode gets its vector, passages and keyword index anew (an episode's next turns their
keyword text too, which may quote it).
"""

import asyncio
import hashlib
import re
import secrets
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from app.core.scope import SYSTEM, Scope
from app.core.text import context_text, preprocess_text
from app.embedding.embedder import SYSTEM_TENANT
from app.models import Episode, Rule, Run, RunFeedback
from app.models.passages import OWNER_COLUMNS
from app.repositories import episodes as episode_rows
from app.repositories import pii_salts as salt_rows
from app.repositories import pii_scrub as scrub_rows
from app.repositories import runs as run_rows
from app.services import events
from app.services.embeddings import embed_texts, store_passages
from app.services.episodes import refresh_keyword_text
from app.services.events import Event
from app.services.jobs import JobContext, JobOutcome
from app.services.runs import run_text

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

    def scrub_json(self, value: Any) -> tuple[Any, int]:
        """A JSON value with every string in it (object keys too) scrubbed, and how many
        matches were replaced."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, list):
            items = [self.scrub_json(item) for item in value]
            return [item for item, _ in items], sum(count for _, count in items)
        if isinstance(value, dict):
            scrubbed, total = {}, 0
            for key, item in value.items():
                new_key, key_count = self.scrub(key)
                scrubbed[new_key], count = self.scrub_json(item)
                total += key_count + count
            return scrubbed, total
        return value, 0


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
                        session, tenant_id=tenant_id, candidate=secrets.token_hex(SALT_BYTES)
                    )
            self._by_tenant[tenant_id] = Scrubber.of(settings.pii_patterns, salt)
        return self._by_tenant[tenant_id]


async def run_pii_scrub(ctx: JobContext, *, tenant_id: str | None, rescan: bool) -> JobOutcome:
    """Scrub the tenant's (every tenant's, without one) run messages, runs, feedback
    rationales, rules and episodes not yet checked (all of them with `rescan`)."""
    result = await _scrub_messages(ctx, tenant_id=tenant_id, rescan=rescan)
    scrubbers = Scrubbers(ctx)
    if tenant_id is not None:
        tenants = [tenant_id]
    else:
        async with ctx.transaction(SYSTEM) as session:
            tenants = await scrub_rows.tenants_to_scrub(session, rescan=rescan)
    for name, scrub_batch in (
        ("runs", partial(_embedded_batch, model=Run, kind="run", scrub=_scrub_runs)),
        ("feedback", _feedback_batch),
        ("rules", partial(_embedded_batch, model=Rule, kind="rule", scrub=_scrub_rules)),
        ("episodes", _episodes_batch),
    ):
        checked = rewritten = 0
        for tenant in tenants:
            scrubber = await scrubbers.of(tenant)
            after: uuid.UUID | None = None
            while True:
                done = await scrub_batch(ctx, scrubber, tenant, after, rescan)
                if done is None:
                    break
                after = done.last_id
                checked += done.checked
                rewritten += done.rewritten
                result["matches"] += done.matches
        result[f"{name}_checked"] = checked
        result[f"{name}_rewritten"] = rewritten
    return JobOutcome(result=result)


@dataclass(frozen=True)
class BatchDone:
    """A batch scrubbed: the last id read, rows checked, rewritten, matches replaced."""

    last_id: uuid.UUID
    checked: int
    rewritten: int
    matches: int


Result = TypeVar("Result")


async def _off_loop(work: Callable[[], Result]) -> Result:
    """Run CPU-bound scrubbing in a thread, so the event loop keeps serving requests."""
    return await asyncio.to_thread(work)


async def _next_rows(
    ctx: JobContext, model: type[Any], tenant_id: str, after: uuid.UUID | None, rescan: bool
) -> list[Any]:
    """The next batch of the tenant's `model` rows to scrub, after `after` in id order."""
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        return await scrub_rows.rows_to_scrub(
            session,
            model,
            tenant_id=tenant_id,
            after=after,
            rescan=rescan,
            limit=ctx.settings.runs.pii_batch_size,
        )


async def _feedback_batch(
    ctx: JobContext, scrubber: Scrubber, tenant_id: str, after: uuid.UUID | None, rescan: bool
) -> BatchDone | None:
    """Rationales: rewritten in place (they have no vector)."""
    batch = await _next_rows(ctx, RunFeedback, tenant_id, after, rescan)
    if not batch:
        return None
    scrubbed = await _off_loop(lambda: [scrubber.scrub(row.rationale or "") for row in batch])
    rewritten = matches = 0
    changed = []
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        for row, (text, count) in zip(batch, scrubbed, strict=True):
            if count and await scrub_rows.rewrite(
                session,
                RunFeedback,
                tenant_id=tenant_id,
                row_id=row.id,
                expected={"rationale": row.rationale},
                values={"rationale": text},
            ):
                rewritten += 1
                matches += count
                changed.append(row)
        await scrub_rows.mark_checked(
            session, RunFeedback, tenant_id=tenant_id, ids=[r.id for r in batch if r not in changed]
        )
        await events.record(
            session,
            [
                Event(
                    "run_feedback_scrubbed",
                    tenant_id,
                    {"run_id": str(row.run_id), "feedback_id": str(row.id)},
                )
                for row in changed
            ],
        )
    return BatchDone(batch[-1].id, len(batch), rewritten, matches)


@dataclass(frozen=True)
class Rewrite:
    """A row whose texts matched: the columns as read and as scrubbed, what to embed."""

    row_id: uuid.UUID
    expected: dict[str, Any]
    values: dict[str, Any]
    text: str
    matches: int
    context: str | None = None


async def _embedded_batch(
    ctx: JobContext,
    scrubber: Scrubber,
    tenant_id: str,
    after: uuid.UUID | None,
    rescan: bool,
    *,
    model: type[Run] | type[Rule],
    kind: str,
    scrub: Callable[[Scrubber, list[Any]], list[Rewrite]],
) -> BatchDone | None:
    """The tenant's next batch of `model` rows (memory type `kind`) scrubbed by `scrub`; those
    that matched are rewritten, embedded and indexed anew."""
    batch = await _next_rows(ctx, model, tenant_id, after, rescan)
    if not batch:
        return None
    found = await _off_loop(lambda: scrub(scrubber, batch))
    rewritten, matches = await _write(ctx, model, kind, tenant_id, batch, found)
    return BatchDone(batch[-1].id, len(batch), rewritten, matches)


def _scrubbed(
    scrubber: Scrubber, *, texts: dict[str, str | None], objects: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Fields as read, the same scrubbed, and how many matches the scrubber replaced."""
    values: dict[str, Any] = {}
    matches = 0
    for name, text in texts.items():
        values[name], count = scrubber.scrub(text) if text is not None else (None, 0)
        matches += count
    for name, value in objects.items():
        values[name], count = scrubber.scrub_json(value)
        matches += count
    return {**texts, **objects}, values, matches


def _scrub_runs(scrubber: Scrubber, batch: list[Run]) -> list[Rewrite]:
    """Runs: summary and meta; the run is embedded and indexed by its task and summary."""
    found = []
    for row in batch:
        expected, values, matches = _scrubbed(
            scrubber, texts={"summary": row.summary}, objects={"meta": row.meta}
        )
        if matches:
            found.append(
                Rewrite(row.id, expected, values, run_text(row.task_id, values["summary"]), matches)
            )
    return found


def _scrub_rules(scrubber: Scrubber, batch: list[Rule]) -> list[Rewrite]:
    """Rules (run lessons among them): content, original content and metadata."""
    found = []
    for row in batch:
        expected, values, matches = _scrubbed(
            scrubber,
            texts={"content": row.content, "original_content": row.original_content},
            objects={"metadata": row.metadata_},
        )
        if matches:
            found.append(Rewrite(row.id, expected, values, values["content"], matches))
    return found


async def _episodes_batch(
    ctx: JobContext, scrubber: Scrubber, tenant_id: str, after: uuid.UUID | None, rescan: bool
) -> BatchDone | None:
    """Episodes: content and metadata; a turn of a session is embedded after the turns
    before it again (scrubbed too)."""
    turns = ctx.embedder.context_turns
    batch = await _next_rows(ctx, Episode, tenant_id, after, rescan)
    if not batch:
        return None
    found = await _off_loop(lambda: _scrub_episodes(scrubber, batch))
    by_id = {row.id: row for row in batch}
    in_session = [r.row_id for r in found if _in_session(by_id[r.row_id])]
    if turns > 0 and in_session:
        async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
            before = await episode_rows.turns_before(
                session, tenant_id=tenant_id, ids=in_session, count=turns
            )
        found = await _off_loop(partial(_with_context, scrubber, found, before))
    rewritten, matches = await _write(
        ctx, Episode, "episode", tenant_id, batch, found, refresh_turns=turns
    )
    return BatchDone(batch[-1].id, len(batch), rewritten, matches)


def _scrub_episodes(scrubber: Scrubber, batch: list[Episode]) -> list[Rewrite]:
    found = []
    for row in batch:
        expected, values, matches = _scrubbed(
            scrubber, texts={"content": row.content}, objects={"metadata": row.metadata_}
        )
        if matches:
            found.append(Rewrite(row.id, expected, values, values["content"], matches))
    return found


def _with_context(
    scrubber: Scrubber, found: list[Rewrite], before: dict[uuid.UUID, list[str]]
) -> list[Rewrite]:
    """Each rewrite with the turns before it, scrubbed, to embed it after."""
    return [
        Rewrite(
            r.row_id,
            r.expected,
            r.values,
            r.text,
            r.matches,
            context_text([scrubber.scrub(t)[0] for t in before[r.row_id]], r.text)
            if before.get(r.row_id)
            else None,
        )
        for r in found
    ]


def _in_session(row: Any) -> bool:
    return row.session_id is not None or row.inferred_session is not None


async def _write(
    ctx: JobContext,
    model: type[Run] | type[Rule] | type[Episode],
    memory_type: str,
    tenant_id: str,
    batch: list[Any],
    found: list[Rewrite],
    *,
    refresh_turns: int | None = None,
) -> tuple[int, int]:
    """Embed the scrubbed texts, then in one transaction rewrite the rows still as read
    with their vectors, passages (runs have none) and keyword text, and mark the rest
    checked; (rewritten, matches)."""
    async with ctx.transaction(Scope(tenant_id=tenant_id)) as session:
        # No SQL has run in this session yet: the model holds no connection.
        embedded = await embed_texts(
            session,
            ctx.embedder,
            [r.text for r in found],
            tenant_id=tenant_id,
            contexts=[r.context for r in found],
        )
        done: list[int] = []
        for index, item in enumerate(found):
            if await scrub_rows.rewrite(
                session,
                model,
                tenant_id=tenant_id,
                row_id=item.row_id,
                expected=item.expected,
                values={**item.values, **embedded.columns(index)},
                search_text=preprocess_text(item.text) if refresh_turns is None else None,
            ):
                done.append(index)
        ids = [found[i].row_id for i in done]
        if memory_type in OWNER_COLUMNS:
            await store_passages(
                session,
                memory_type,
                tenant_id=tenant_id,
                memory_ids=ids,
                embedded=embedded.only(done),
                replace=True,
            )
        if refresh_turns is not None and ids:
            after = await episode_rows.turns_after(
                session, tenant_id=tenant_id, ids=ids, count=refresh_turns
            )
            await refresh_keyword_text(
                session,
                tenant_id=tenant_id,
                ids=list(dict.fromkeys([*ids, *after])),
                context_turns=refresh_turns,
                keyword_context=ctx.settings.keyword_context,
            )
        found_ids = {r.row_id for r in found}
        await scrub_rows.mark_checked(
            session, model, tenant_id=tenant_id, ids=[r.id for r in batch if r.id not in found_ids]
        )
        if ids:
            await events.record(
                session,
                [
                    Event(
                        "memories_scrubbed",
                        tenant_id,
                        {"memory_type": memory_type, "memory_ids": [str(i) for i in ids]},
                    )
                ],
            )
    return len(done), sum(found[i].matches for i in done)


async def _scrub_messages(
    ctx: JobContext, *, tenant_id: str | None, rescan: bool
) -> dict[str, int]:
    """Scrub the run messages not yet checked (all of them with `rescan`)."""
    settings = ctx.settings.runs
    scrubbers = Scrubbers(ctx)
    checked = rewritten = matches = 0
    after = 0
    # One tenant's messages, or (a job without a tenant) every tenant's.
    scope = Scope(tenant_id=tenant_id) if tenant_id is not None else SYSTEM
    while True:
        async with ctx.transaction(scope) as session:
            batch = await run_rows.messages_to_scrub(
                session,
                tenant_id=tenant_id,
                after=after,
                rescan=rescan,
                limit=settings.pii_batch_size,
            )
        if not batch:
            break
        after = batch[-1].position
        by_tenant = {
            tenant: await scrubbers.of(tenant)
            for tenant in dict.fromkeys(row.tenant_id for row in batch)
        }
        scrubbed = await _off_loop(partial(_scrub_messages_of, by_tenant, batch))
        changed = []
        for row, (text, count) in zip(batch, scrubbed, strict=True):
            if count:
                changed.append((row, text))
                matches += count
        async with ctx.transaction(scope) as session:
            # No SQL has run in this session yet: the model holds no connection.
            embedded = await embed_texts(
                session,
                ctx.embedder,
                [text for _, text in changed],
                tenant_id=tenant_id or SYSTEM_TENANT,
                bulk=True,
            )
            done = {row.id for row, _ in changed}
            for index, (row, text) in enumerate(changed):
                if await run_rows.rewrite_message(
                    session,
                    tenant_id=row.tenant_id,
                    message_id=row.id,
                    old_content=row.content,
                    content=text,
                    vectors=embedded.columns(index),
                    search_text=preprocess_text(text),
                ):
                    rewritten += 1
            unchanged: dict[str, list[uuid.UUID]] = {}
            for row in batch:
                if row.id not in done:
                    unchanged.setdefault(row.tenant_id, []).append(row.id)
            for tenant, ids in unchanged.items():
                await run_rows.mark_scrubbed(session, tenant_id=tenant, ids=ids)
            await events.record(
                session,
                [
                    Event(
                        "run_messages_scrubbed",
                        row.tenant_id,
                        {"run_id": str(row.run_id), "message_id": str(row.id)},
                    )
                    for row, _ in changed
                ],
            )
        checked += len(batch)
    return {"messages_checked": checked, "messages_rewritten": rewritten, "matches": matches}


def _scrub_messages_of(by_tenant: dict[str, Scrubber], batch: list[Any]) -> list[tuple[str, int]]:
    return [by_tenant[row.tenant_id].scrub(row.content) for row in batch]
