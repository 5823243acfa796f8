"""Applying a parsed consolidation result: every action isolated in its own savepoint."""

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import partial
from typing import Any, Literal

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.config import AutoLinkSettings
from app.core.errors import Conflict, NotFound, found
from app.embedding import Embedder
from app.models import Fact, Rule
from app.repositories import links as link_rows
from app.repositories import memories as memory_rows
from app.repositories.links import LinkEnds
from app.schemas.common import MemoryRef
from app.schemas.facts import FactCreate
from app.schemas.procedures import ProcedureCreate, ProcedureStep
from app.schemas.rules import RuleCreate
from app.services.fact_timeline import close_superseded
from app.services.facts import store_fact
from app.services.memories import confirm
from app.services.procedures import create_procedure
from app.services.rules import store_rule
from app.worker.consolidation.parser import (
    ConsolidationResult,
    NewFact,
    NewProcedure,
    NewRule,
    UpdatedFact,
)

logger = logging.getLogger(__name__)


@dataclass
class WriteCounts:
    """How many memories and links consolidation wrote, by kind."""

    facts_created: int = 0
    facts_updated: int = 0
    rules_created: int = 0
    procedures_created: int = 0
    confirmations: int = 0
    links_created: int = 0

    def add_counts(self, other: "WriteCounts") -> None:
        """Add `other`'s counts to these."""
        for name in (f.name for f in fields(WriteCounts)):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Skipped:
    """How many actions were skipped: naming a fact or rule the prompt did not show, or
    writing outside the scopes the writers of the group's records may write."""

    targets_not_shown: int = 0
    writes_refused: int = 0

    def add_skipped(self, other: "Skipped") -> None:
        """Add `other`'s counts to these."""
        self.targets_not_shown += other.targets_not_shown
        self.writes_refused += other.writes_refused


@dataclass
class ExecutionOutcome(Skipped, WriteCounts):
    """Counts of what one group's actions wrote, skipped or failed, and one line for each
    action skipped or failed, in the order of the model's answer."""

    failed: int = 0
    errors: list[str] = field(default_factory=list)


class ActionSkipped(Exception):
    """An action left undone on purpose; `counter` is the Skipped count it adds to."""

    def __init__(
        self, reason: str, *, counter: Literal["targets_not_shown", "writes_refused"]
    ) -> None:
        super().__init__(reason)
        self.counter = counter


@dataclass(frozen=True)
class GroupScope:
    """Who the group belongs to and which records it holds: episodes of a butler, or
    reflections (`agent_event`) of a ledger, whose name is then the scope."""

    tenant_id: str
    butler: str
    episode_ids: list[uuid.UUID]
    source_type: str = "episode"
    # When each episode occurred: a fact's valid_from when the model gives none.
    occurred: dict[uuid.UUID, datetime] = field(default_factory=dict)
    # The existing facts and rules the prompt showed: the only ones an update or a
    # confirmation may name.
    shown: frozenset[uuid.UUID] = frozenset()
    # The scopes every key limited to butlers that wrote one of the records may write;
    # None when no such key wrote any.
    writable: frozenset[str] | None = None

    def may_write(self, scope: str) -> bool:
        """Whether what the group's records teach may land in `scope`."""
        return self.writable is None or scope in self.writable


async def execute_consolidation(
    session: AsyncSession,
    *,
    embedder: Embedder,
    group: GroupScope,
    parsed: ConsolidationResult,
    auto_links: AutoLinkSettings | None = None,
) -> ExecutionOutcome:
    """Run every action of `parsed`; one failing action never stops the others. New facts
    and rules are linked `related_to` their most similar ones as stored ones are
    (`auto_links`)."""
    outcome = ExecutionOutcome()

    async def attempt(label: str, action: Callable[[], Awaitable[None]]) -> None:
        try:
            async with session.begin_nested():
                await action()
        except ActionSkipped as skip:
            logger.warning(
                "consolidation of %s %r skipped %s: %s",
                group.source_type,
                group.butler,
                label,
                skip,
            )
            setattr(outcome, skip.counter, getattr(outcome, skip.counter) + 1)
            outcome.errors.append(f"{label}: {skip}")
        except Exception as exc:  # noqa: BLE001 - each action is isolated by design
            logger.warning("consolidation action %s failed: %s", label, exc)
            outcome.failed += 1
            outcome.errors.append(f"{label}: {describe_error(exc)}")

    actions: tuple[tuple[str, list[Any], Callable[[Any], Callable[[], Awaitable[None]]]], ...] = (
        (
            "new_facts",
            parsed.new_facts,
            lambda item: partial(_new_fact, session, embedder, group, item, outcome, auto_links),
        ),
        (
            "updated_facts",
            parsed.updated_facts,
            lambda item: partial(_updated_fact, session, embedder, group, item, outcome),
        ),
        (
            "new_rules",
            parsed.new_rules,
            lambda item: partial(_new_rule, session, embedder, group, item, outcome, auto_links),
        ),
        (
            "procedures",
            parsed.procedures,
            lambda item: partial(_new_procedure, session, embedder, group, item, outcome),
        ),
        (
            "confirmations",
            parsed.confirmations,
            lambda item: partial(_confirm, session, group, item, outcome),
        ),
    )
    for key, items, action in actions:
        for index, item in enumerate(items):
            await attempt(f"{key}[{parsed.place(key, index)}]", action(item))
    return outcome


def _sources(group: GroupScope, requested: list[uuid.UUID]) -> list[uuid.UUID]:
    """The requested records that belong to this batch; every record of the batch when the
    model names none of them, so nothing consolidated is left without provenance."""
    batch = set(group.episode_ids)
    named = [episode_id for episode_id in requested if episode_id in batch]
    return named or list(group.episode_ids)


def _fact_data(
    group: GroupScope, item: NewFact, *, scope: str, entity_id: uuid.UUID | None
) -> FactCreate:
    sources = _sources(group, item.source_episode_ids)
    valid_from = item.valid_from or min(
        (group.occurred[s] for s in sources if s in group.occurred), default=None
    )
    valid_until = item.valid_until
    if valid_until is not None and valid_from is not None and valid_until <= valid_from:
        valid_until = None
    return FactCreate(
        subject=item.subject,
        predicate=item.predicate,
        content=item.content,
        importance=item.importance,
        permanence=item.permanence,
        scope=scope,
        tags=item.tags,
        entity_id=entity_id,
        source_butler=group.butler,
        source_episode_id=sources[0] if sources and group.source_type == "episode" else None,
        metadata={"origin": "consolidation"},
        valid_from=valid_from,
        valid_until=valid_until,
    )


async def _link_sources(
    session: AsyncSession,
    group: GroupScope,
    *,
    source_type: str,
    source_id: uuid.UUID,
    requested: list[uuid.UUID],
    outcome: ExecutionOutcome,
) -> None:
    for episode_id in _sources(group, requested):
        if await link_rows.create_link(
            session,
            tenant_id=group.tenant_id,
            ends=LinkEnds(source_type, source_id, group.source_type, episode_id),
            relation="derived_from",
        ):
            outcome.links_created += 1


def _require_shown(group: GroupScope, memory_id: uuid.UUID, target: str) -> None:
    """Skip the action (targets_not_shown) unless the prompt showed `memory_id`."""
    if memory_id not in group.shown:
        raise ActionSkipped(
            f"{target} {memory_id} not shown to the model", counter="targets_not_shown"
        )


def _require_writable(group: GroupScope, scope: str, target: str = "") -> None:
    """Skip the action (writes_refused) unless the group may write in `scope`."""
    if group.may_write(scope):
        return
    writers = "episodes'" if group.source_type == "episode" else "reflections'"
    where = f"{target} in scope {scope!r}" if target else f"scope {scope!r}"
    raise ActionSkipped(
        f"{where} not writable by the {writers} writers (limited to "
        f"{', '.join(sorted(group.writable or ()))})",
        counter="writes_refused",
    )


async def _new_fact(
    session: AsyncSession,
    embedder: Embedder,
    group: GroupScope,
    item: NewFact,
    outcome: ExecutionOutcome,
    auto_links: AutoLinkSettings | None,
) -> None:
    _require_writable(group, group.butler)
    data = _fact_data(group, item, scope=group.butler, entity_id=None)
    stored = await store_fact(
        session, tenant_id=group.tenant_id, embedder=embedder, data=data, auto_links=auto_links
    )
    await _link_sources(
        session,
        group,
        source_type="fact",
        source_id=stored.fact.id,
        requested=item.source_episode_ids,
        outcome=outcome,
    )
    # An identical active fact is confirmed, not created again.
    if stored.created:
        outcome.facts_created += 1


async def _updated_fact(
    session: AsyncSession,
    embedder: Embedder,
    group: GroupScope,
    item: UpdatedFact,
    outcome: ExecutionOutcome,
) -> None:
    _require_shown(group, item.target_id, "target fact")
    target = await memory_rows.get(
        session, Fact, tenant_id=group.tenant_id, memory_id=item.target_id, for_update=True
    )
    target = found(target, f"target fact {item.target_id} not found")
    if target.validity != "active":
        raise Conflict(f"target fact {item.target_id} is {target.validity}, not active")
    _require_writable(group, target.scope, f"target fact {target.id}")
    data = _fact_data(group, item, scope=target.scope, entity_id=target.entity_id)
    fact = (await store_fact(session, tenant_id=group.tenant_id, embedder=embedder, data=data)).fact
    # fact is the target itself when the update repeats its key and content (a confirmation);
    # a version about an earlier period is history and leaves the target current.
    if fact.id != target.id and fact.validity == "active" and fact.supersedes_id != target.id:
        await _supersede(session, group.tenant_id, target=target, fact=fact)
    await _link_sources(
        session,
        group,
        source_type="fact",
        source_id=fact.id,
        requested=item.source_episode_ids,
        outcome=outcome,
    )
    outcome.facts_updated += 1


async def _supersede(session: AsyncSession, tenant_id: str, *, target: Fact, fact: Fact) -> None:
    """Supersede the named target whose key differs from the new fact's."""
    await close_superseded(session, tenant_id=tenant_id, target=target, fact=fact)
    if fact.supersedes_id is None:
        await memory_rows.update_row(
            session,
            Fact,
            tenant_id=tenant_id,
            memory_id=fact.id,
            values={"supersedes_id": target.id},
        )
    await link_rows.link_supersedes(session, tenant_id=tenant_id, newer=fact.id, older=target.id)


async def _new_rule(
    session: AsyncSession,
    embedder: Embedder,
    group: GroupScope,
    item: NewRule,
    outcome: ExecutionOutcome,
    auto_links: AutoLinkSettings | None,
) -> None:
    _require_writable(group, group.butler)
    sources = _sources(group, item.source_episode_ids)
    data = RuleCreate(
        content=item.content,
        scope=group.butler,
        tags=item.tags,
        source_butler=group.butler,
        source_episode_id=(sources[0] if sources and group.source_type == "episode" else None),
        metadata={"origin": "consolidation"},
    )
    rule = await store_rule(
        session, tenant_id=group.tenant_id, embedder=embedder, data=data, auto_links=auto_links
    )
    await _link_sources(
        session,
        group,
        source_type="rule",
        source_id=rule.id,
        requested=item.source_episode_ids,
        outcome=outcome,
    )
    outcome.rules_created += 1


async def _new_procedure(
    session: AsyncSession,
    embedder: Embedder,
    group: GroupScope,
    item: NewProcedure,
    outcome: ExecutionOutcome,
) -> None:
    """Store the proposal as a draft procedure of the butler, learned from its episodes."""
    _require_writable(group, group.butler)
    sources = _sources(group, item.source_episode_ids) if group.source_type == "episode" else []
    data = ProcedureCreate(
        agent_id=group.butler,
        name=item.name,
        description=item.description,
        steps=[
            ProcedureStep(
                step=number,
                action=step.action,
                params_template=step.params_template,
                conditions=step.conditions,
            )
            for number, step in enumerate(item.steps, start=1)
        ],
        preconditions=item.preconditions,
        postconditions=item.postconditions,
        learned_from=[
            MemoryRef(memory_type="episode", memory_id=episode_id) for episode_id in sources
        ],
        status="draft",
    )
    await create_procedure(session, tenant_id=group.tenant_id, embedder=embedder, data=data)
    outcome.procedures_created += 1
    outcome.links_created += len(sources)


async def _confirm(
    session: AsyncSession, group: GroupScope, memory_id: uuid.UUID, outcome: ExecutionOutcome
) -> None:
    """Confirm the fact with this id, else the rule with it."""
    _require_shown(group, memory_id, "fact or rule")
    named: Fact | Rule | None = await memory_rows.get(
        session, Fact, tenant_id=group.tenant_id, memory_id=memory_id
    )
    if named is None:
        named = await memory_rows.get(session, Rule, tenant_id=group.tenant_id, memory_id=memory_id)
    if named is None:
        raise NotFound(f"no fact or rule {memory_id}")
    _require_writable(
        group, named.scope, f"{'fact' if isinstance(named, Fact) else 'rule'} {memory_id}"
    )
    await confirm(
        session,
        Fact if isinstance(named, Fact) else Rule,
        tenant_id=group.tenant_id,
        memory_id=memory_id,
    )
    outcome.confirmations += 1


def describe_error(
    exc: Exception, *, limit: int = 500, plain: tuple[type[Exception], ...] = ()
) -> str:
    """One line saying what went wrong; `plain` types are told by their message alone."""
    if isinstance(exc, plain):
        return str(exc)[:limit]
    if isinstance(exc, ValidationError):
        return "invalid " + "; ".join(
            f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in exc.errors()
        )
    detail = getattr(exc, "detail", None)
    if isinstance(detail, str):
        return detail
    message = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {message}"[:limit]
