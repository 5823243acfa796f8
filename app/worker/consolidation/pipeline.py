"""The consolidation job: claim a butler group, prompt the model, apply its answer."""

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.core.config import JobSettings
from app.core.constants import SECONDS_PER_HOUR
from app.core.scope import SYSTEM, Scope
from app.formulas.salience import REFLECTION_KIND
from app.models import AgentEvent, Episode
from app.repositories import consolidation as consolidation_rows
from app.repositories import jobs as job_rows
from app.repositories import provenance as provenance_rows
from app.repositories.consolidation import PendingGroup, RetryPolicy
from app.repositories.provenance import IdField
from app.services import events
from app.services.jobs import JobContext, JobOutcome
from app.worker.consolidation.executor import (
    ExecutionOutcome,
    GroupScope,
    Skipped,
    WriteCounts,
    describe_error,
    execute_consolidation,
)
from app.worker.consolidation.parser import (
    ConsolidationResult,
    parse_consolidation_output,
)
from app.worker.consolidation.prompt import (
    SYSTEM_MESSAGE,
    EpisodeItem,
    FactItem,
    RuleItem,
    build_prompt,
)
from app.worker.llm import ChatClient, ChatMessage, LLMError

logger = logging.getLogger(__name__)

MAX_CONTEXT_FACTS = 100
MAX_CONTEXT_RULES = 50
MAX_LISTED_GROUPS = 1000
MAX_ERROR_CHARS = 2000
# A reflection is already a compacted belief over many events: weigh it above a plain turn.
REFLECTION_IMPORTANCE = 7.0
DRY_RUN_REASON = "no LLM configured (llm.base_url is unset): episodes grouped and counted only"


def retry_policy(settings: JobSettings) -> RetryPolicy:
    """When episodes whose consolidation failed are tried again."""
    return RetryPolicy(
        max_attempts=settings.consolidation_max_attempts,
        backoff_seconds=settings.consolidation_retry_backoff_hours * SECONDS_PER_HOUR,
        max_backoff_seconds=settings.consolidation_retry_max_backoff_hours * SECONDS_PER_HOUR,
    )


class GroupFailed(Exception):
    """The model gave nothing usable for a group; its episodes stay pending."""


@dataclass
class Tally(Skipped, WriteCounts):
    """Figures of one consolidation job."""

    groups_processed: int = 0
    groups_succeeded: int = 0
    groups_failed: int = 0
    episodes_consolidated: int = 0
    episodes_retrying: int = 0
    episodes_failed: int = 0
    reflections_consolidated: int = 0
    action_errors: int = 0
    parse_errors: int = 0
    errors: list[str] = field(default_factory=list)
    job_id: uuid.UUID | None = None

    def add(self, outcome: ExecutionOutcome) -> None:
        """Count what one group wrote."""
        self.add_counts(outcome)
        self.add_skipped(outcome)
        self.action_errors += outcome.failed

    def succeeded(self, label: str, outcome: ExecutionOutcome, parsed: ConsolidationResult) -> None:
        """Count one group that was written, with its parse and action errors."""
        self.add(outcome)
        self.groups_succeeded += 1
        self.parse_errors += len(parsed.parse_errors)
        self.errors.extend(f"{label}: parse: {error}" for error in parsed.parse_errors)
        self.errors.extend(f"{label}: {error}" for error in outcome.errors)

    def failed(self, label: str, message: str) -> None:
        """Count one group that failed, with its error."""
        self.groups_failed += 1
        self.errors.append(f"{label}: {message}")

    def figures(self) -> dict[str, Any]:
        """Every count, without the error list."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in ("errors", "job_id")
        }

    async def commit_with(self, session: AsyncSession, counts: dict[str, int]) -> None:
        """Add one group's figures to the job's progress, in the group's transaction."""
        if self.job_id is not None:
            await job_rows.add_progress(session, job_id=self.job_id, counts=counts)


async def run_consolidation(
    ctx: JobContext, *, tenant_id: str | None, job_id: uuid.UUID | None = None
) -> JobOutcome:
    """Consolidate pending episodes of one tenant (or all when None), group by group, then
    the ledger's reflections consolidation has not read yet, ledger by ledger.

    With a job, each group's figures are added to the job's progress in the transaction that
    wrote the group, and the result reports the progress: every attempt's work adds up.
    """
    if not ctx.settings.llm.base_url:
        return await dry_run(ctx, tenant_id=tenant_id)
    tally = Tally(job_id=job_id)
    skipped: set[tuple[str, str]] = set()
    async with ChatClient(ctx.settings.llm) as client:
        while await _next_group(ctx, client, tenant_id=tenant_id, skipped=skipped, tally=tally):
            pass
        while await _next_reflection_group(
            ctx, client, tenant_id=tenant_id, skipped=skipped, tally=tally
        ):
            pass
    failed = tally.groups_failed > 0 and tally.groups_succeeded == 0
    figures = tally.figures()
    if job_id is not None:
        async with ctx.transaction(SYSTEM) as session:
            figures.update(await job_rows.progress_of(session, job_id=job_id))
    result = {"dry_run": False, "model": ctx.settings.llm.model, **figures}
    return JobOutcome(result=result, errors=tally.errors, failed=failed)


async def dry_run(ctx: JobContext, *, tenant_id: str | None) -> JobOutcome:
    """Group and count pending episodes; nothing is written."""
    async with ctx.transaction(_listing_scope(tenant_id)) as session:
        groups = await consolidation_rows.pending_groups(session, tenant_id=tenant_id)
    listed = [
        {"tenant_id": g.tenant_id, "butler": g.butler, "episodes": g.episodes}
        for g in groups[:MAX_LISTED_GROUPS]
    ]
    return JobOutcome(
        result={
            "dry_run": True,
            "reason": DRY_RUN_REASON,
            "groups_total": len(groups),
            "episodes_pending": sum(g.episodes for g in groups),
            "groups": listed,
        }
    )


async def _next_group(
    ctx: JobContext,
    client: ChatClient,
    *,
    tenant_id: str | None,
    skipped: set[tuple[str, str]],
    tally: Tally,
) -> bool:
    """Consolidate one batch of a group no other worker holds; False when none is left."""
    async with ctx.transaction(_listing_scope(tenant_id)) as session:
        groups = await consolidation_rows.pending_groups(session, tenant_id=tenant_id)
    return await _first_free(
        ctx,
        [(group, group) for group in groups],
        skipped,
        lambda group: _consolidate_batch(ctx, client, group=group, tally=tally),
    )


async def _first_free(
    ctx: JobContext,
    groups: list[tuple[PendingGroup, PendingGroup]],
    skipped: set[tuple[str, str]],
    consolidate: Callable[[PendingGroup], Awaitable[bool | None]],
) -> bool:
    """Consolidate one batch of the first group no other worker holds and not skipped; False
    when none is left. Each group comes with the group whose key it is locked and skipped by."""
    for held, group in groups:
        key = (held.tenant_id, held.butler)
        if key in skipped:
            continue
        async with ctx.connection() as conn:
            if not await consolidation_rows.try_lock_group(
                conn, tenant_id=held.tenant_id, butler=held.butler
            ):
                continue
            try:
                consolidated = await consolidate(group)
            finally:
                await _unlock(conn, held)
        if consolidated is None:
            continue
        if not consolidated:
            skipped.add(key)
        return True
    return False


def _listing_scope(tenant_id: str | None) -> Scope:
    """The tenant's own scope, or the system's to list the groups of every tenant."""
    return SYSTEM if tenant_id is None else Scope(tenant_id=tenant_id)


async def _unlock(conn: AsyncConnection, group: PendingGroup) -> None:
    try:
        await consolidation_rows.unlock_group(conn, tenant_id=group.tenant_id, butler=group.butler)
    except Exception:  # noqa: BLE001 - closing the connection releases the lock instead
        logger.warning(
            "could not release the consolidation lock; dropping the connection", exc_info=True
        )
        await conn.invalidate()


async def _consolidate_batch(
    ctx: JobContext, client: ChatClient, *, group: PendingGroup, tally: Tally
) -> bool | None:
    """Prompt with no transaction open, then apply the answer in one transaction.

    True when the batch was consolidated, False when it failed (its episodes stay pending
    with retry_count + 1, or become failed until their backoff ends), None when nothing was
    pending any more.
    """
    unit = _unit(group, tally)
    async with ctx.transaction(unit) as session:
        episodes = await consolidation_rows.pending_episodes(
            session,
            tenant_id=group.tenant_id,
            butler=group.butler,
            limit=ctx.settings.jobs.consolidation_batch_size,
        )
        if not episodes:
            return None
        prompt, scope = await _read_batch(
            session,
            group,
            EPISODE_WRITES,
            episodes,
            [
                EpisodeItem(str(e.id), e.created_at, e.importance, e.content, e.occurred_at)
                for e in episodes
            ],
            occurred={e.id: e.occurred_at for e in episodes},
        )
    label = f"tenant {scope.tenant_id!r} butler {scope.butler!r}"
    tally.groups_processed += 1
    try:
        parsed = await _ask_model(client, prompt)
        async with ctx.transaction(unit) as session:
            still_pending = await consolidation_rows.lock_still_pending(
                session, tenant_id=scope.tenant_id, episode_ids=scope.episode_ids
            )
            scope = replace(scope, episode_ids=still_pending)
            outcome = await _apply_answer(ctx, session, scope, parsed)
            await consolidation_rows.mark_consolidated(
                session, tenant_id=scope.tenant_id, episode_ids=scope.episode_ids
            )
            await _record_written(
                session,
                tally,
                scope,
                event_type="episodes_consolidated",
                payload=_payload(scope, outcome),
                counter="episodes_consolidated",
                outcome=outcome,
                parsed=parsed,
            )
    except Exception as exc:  # noqa: BLE001 - recorded on the episodes and in the job
        message = _failure_message(exc, label)
        async with ctx.transaction(unit) as session:
            retrying, failed = await _record_episodes_failed(ctx, session, scope, message, tally)
        tally.failed(label, message)
        tally.episodes_retrying += retrying
        tally.episodes_failed += failed
        return False
    tally.succeeded(label, outcome, parsed)
    tally.episodes_consolidated += len(scope.episode_ids)
    return True


async def _record_episodes_failed(
    ctx: JobContext, session: AsyncSession, scope: GroupScope, message: str, tally: Tally
) -> tuple[int, int]:
    """Record a failed batch on its episodes, in an event and in the job's progress; how many
    episodes will be retried and how many failed."""
    retrying, failed = await consolidation_rows.record_failure(
        session,
        tenant_id=scope.tenant_id,
        episode_ids=scope.episode_ids,
        error=message,
        policy=retry_policy(ctx.settings.jobs),
    )
    await events.record(
        session,
        [
            events.Event(
                "episodes_consolidation_failed",
                scope.tenant_id,
                {
                    "butler": scope.butler,
                    "error": message,
                    "episode_ids": [str(i) for i in scope.episode_ids],
                },
                actor="consolidation",
            )
        ],
    )
    await tally.commit_with(
        session,
        {
            "groups_processed": 1,
            "groups_failed": 1,
            "episodes_retrying": retrying,
            "episodes_failed": failed,
        },
    )
    return retrying, failed


@dataclass(frozen=True)
class Prompt:
    """A batch's prompt and the ids of the existing facts and rules it shows."""

    text: str
    shown: frozenset[uuid.UUID]


async def _prompt(session: AsyncSession, group: PendingGroup, items: list[EpisodeItem]) -> Prompt:
    """The prompt of one batch, with the butler's existing facts and rules as dedup context."""
    facts = await consolidation_rows.active_facts(
        session, tenant_id=group.tenant_id, butler=group.butler, limit=MAX_CONTEXT_FACTS
    )
    rules = await consolidation_rows.active_rules(
        session, tenant_id=group.tenant_id, butler=group.butler, limit=MAX_CONTEXT_RULES
    )
    text = build_prompt(
        butler=group.butler,
        episodes=items,
        facts=[
            FactItem(str(f.id), f.scope, f.subject, f.predicate, f.content, f.permanence)
            for f in facts
        ],
        rules=[RuleItem(str(r.id), r.scope, r.maturity, r.content) for r in rules],
    )
    return Prompt(text, frozenset([f.id for f in facts] + [r.id for r in rules]))


@dataclass(frozen=True)
class Writes:
    """The event that records who wrote one kind of record, and the payload field naming it."""

    event_type: str
    id_field: IdField


EPISODE_WRITES = Writes("episode_created", "memory_id")
REFLECTION_WRITES = Writes("agent_reflected", "event_id")


async def _writable(
    session: AsyncSession, tenant_id: str, writes: Writes, ids: list[uuid.UUID], since: datetime
) -> frozenset[str] | None:
    """The scopes every key limited to butlers that wrote one of `ids` may write (the
    butlers all of them share); None when no such key wrote any. What consolidation learns
    from records stays where their writers could have written it themselves."""
    limits = await provenance_rows.writers_butlers(
        session,
        tenant_id=tenant_id,
        event_type=writes.event_type,
        id_field=writes.id_field,
        ids=ids,
        since=since,
    )
    if not limits:
        return None
    return frozenset.intersection(*(frozenset(butlers) for butlers in limits))


async def _next_reflection_group(
    ctx: JobContext,
    client: ChatClient,
    *,
    tenant_id: str | None,
    skipped: set[tuple[str, str]],
    tally: Tally,
) -> bool:
    """Consolidate one batch of a ledger's unread reflections; False when none is left."""
    async with ctx.transaction(_listing_scope(tenant_id)) as session:
        groups = await consolidation_rows.reflection_groups(
            session, tenant_id=tenant_id, kind=REFLECTION_KIND
        )
    # The lock and skip keys of a ledger never meet a butler's.
    held = [(PendingGroup(g.tenant_id, f"ledger:{g.butler}", g.episodes), g) for g in groups]
    return await _first_free(
        ctx,
        held,
        skipped,
        lambda group: _consolidate_reflections(ctx, client, group=group, tally=tally),
    )


async def _consolidate_reflections(
    ctx: JobContext, client: ChatClient, *, group: PendingGroup, tally: Tally
) -> bool | None:
    """Like an episode batch: each reflection's belief is an item of the prompt, and what the
    model makes of it is scoped to the ledger and linked `derived_from` the reflection. Read
    reflections are marked; a failed batch stays unread for the next job."""
    unit = _unit(group, tally)
    async with ctx.transaction(unit) as session:
        reflections = await consolidation_rows.unread_reflections(
            session,
            tenant_id=group.tenant_id,
            ledger=group.butler,
            kind=REFLECTION_KIND,
            limit=ctx.settings.jobs.consolidation_batch_size,
        )
        if not reflections:
            return None
        prompt, scope = await _read_batch(
            session,
            group,
            REFLECTION_WRITES,
            reflections,
            [
                EpisodeItem(
                    str(r.id),
                    r.created_at,
                    REFLECTION_IMPORTANCE,
                    f"{r.agent_id} reflected: {r.content}",
                )
                for r in reflections
            ],
            source_type="agent_event",
        )
    label = f"tenant {scope.tenant_id!r} ledger {scope.butler!r}"
    tally.groups_processed += 1
    try:
        parsed = await _ask_model(client, prompt)
        async with ctx.transaction(unit) as session:
            outcome = await _apply_answer(ctx, session, scope, parsed)
            await consolidation_rows.mark_reflections_read(
                session, tenant_id=scope.tenant_id, event_ids=scope.episode_ids
            )
            await _record_written(
                session,
                tally,
                scope,
                event_type="reflections_consolidated",
                payload={
                    **_payload(scope, outcome),
                    "ledger": scope.butler,
                    "reflection_ids": [str(i) for i in scope.episode_ids],
                },
                counter="reflections_consolidated",
                outcome=outcome,
                parsed=parsed,
            )
    except Exception as exc:  # noqa: BLE001 - recorded in the job; the batch stays unread
        message = _failure_message(exc, label)
        async with ctx.transaction(unit) as session:
            await tally.commit_with(session, {"groups_processed": 1, "groups_failed": 1})
        tally.failed(label, message)
        return False
    tally.succeeded(label, outcome, parsed)
    tally.reflections_consolidated += len(scope.episode_ids)
    return True


def _unit(group: PendingGroup, tally: Tally) -> Scope:
    """The scope of a batch's transactions: the group's tenant, and the job when there is one."""
    return Scope(
        tenant_id=group.tenant_id, job_id=str(tally.job_id) if tally.job_id is not None else None
    )


async def _read_batch(
    session: AsyncSession,
    group: PendingGroup,
    writes: Writes,
    records: Sequence[Episode | AgentEvent],
    items: list[EpisodeItem],
    *,
    source_type: str = "episode",
    occurred: dict[uuid.UUID, datetime] | None = None,
) -> tuple[str, GroupScope]:
    """The prompt of a batch of `records` (shown to the model as `items`) and the batch's
    scope: the facts and rules the prompt shows, the scopes the records' writers may write."""
    prompt = await _prompt(session, group, items)
    ids = [r.id for r in records]
    writable = await _writable(
        session, group.tenant_id, writes, ids, min(r.created_at for r in records)
    )
    scope = GroupScope(
        group.tenant_id,
        group.butler,
        ids,
        source_type=source_type,
        occurred=occurred or {},
        shown=prompt.shown,
        writable=writable,
    )
    return prompt.text, scope


async def _apply_answer(
    ctx: JobContext, session: AsyncSession, scope: GroupScope, parsed: ConsolidationResult
) -> ExecutionOutcome:
    """Write what the model's answer asks for the group."""
    return await execute_consolidation(
        session,
        embedder=ctx.embedder,
        group=scope,
        auto_links=ctx.settings.auto_links,
        parsed=parsed,
    )


async def _record_written(
    session: AsyncSession,
    tally: Tally,
    scope: GroupScope,
    *,
    event_type: str,
    payload: dict[str, Any],
    counter: str,
    outcome: ExecutionOutcome,
    parsed: ConsolidationResult,
) -> None:
    """Record a written batch in an event and in the job's progress, its records under
    `counter`."""
    await events.record(
        session, [events.Event(event_type, scope.tenant_id, payload, actor="consolidation")]
    )
    await tally.commit_with(
        session, {counter: len(scope.episode_ids), **_success_counts(outcome, parsed)}
    )


def _failure_message(exc: Exception, label: str) -> str:
    """What went wrong with a batch, logged."""
    message = describe_error(exc, limit=MAX_ERROR_CHARS, plain=(GroupFailed, LLMError))
    logger.warning("consolidation of %s failed: %s", label, message)
    return message


async def _ask_model(client: ChatClient, prompt: str) -> ConsolidationResult:
    """The model's parsed answer; GroupFailed when it holds nothing usable."""
    output = await client.complete(
        [ChatMessage("system", SYSTEM_MESSAGE), ChatMessage("user", prompt)]
    )
    parsed = parse_consolidation_output(output)
    if parsed.parse_errors and not _has_actions(parsed):
        raise GroupFailed("unusable model output: " + "; ".join(parsed.parse_errors))
    return parsed


def _has_actions(parsed: ConsolidationResult) -> bool:
    return bool(
        parsed.new_facts
        or parsed.updated_facts
        or parsed.new_rules
        or parsed.procedures
        or parsed.confirmations
    )


def _success_counts(outcome: ExecutionOutcome, parsed: ConsolidationResult) -> dict[str, int]:
    """A succeeded batch's figures for the job's progress."""
    return {
        "groups_processed": 1,
        "groups_succeeded": 1,
        "facts_created": outcome.facts_created,
        "facts_updated": outcome.facts_updated,
        "rules_created": outcome.rules_created,
        "procedures_created": outcome.procedures_created,
        "confirmations": outcome.confirmations,
        "links_created": outcome.links_created,
        "targets_not_shown": outcome.targets_not_shown,
        "writes_refused": outcome.writes_refused,
        "action_errors": outcome.failed,
        "parse_errors": len(parsed.parse_errors),
    }


def _payload(scope: GroupScope, outcome: ExecutionOutcome) -> dict[str, Any]:
    return {
        "butler": scope.butler,
        "episode_ids": [str(i) for i in scope.episode_ids],
        "facts_created": outcome.facts_created,
        "facts_updated": outcome.facts_updated,
        "rules_created": outcome.rules_created,
        "procedures_created": outcome.procedures_created,
        "confirmations": outcome.confirmations,
        "targets_not_shown": outcome.targets_not_shown,
        "writes_refused": outcome.writes_refused,
        "errors": outcome.failed,
    }
