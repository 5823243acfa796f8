"""SQL of the consolidation pipeline: pending groups, group locks, dedup context, outcomes."""

import uuid
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Float, bindparam, case, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from app.core.scope import transaction_now
from app.models import AgentEvent, Episode, Fact, ReflectionConsolidation, Rule


@dataclass(frozen=True)
class PendingGroup:
    tenant_id: str
    butler: str
    episodes: int


# Pending and failed episodes both wait for consolidation; a failed one after its backoff.
AWAITING = ("pending", "failed")


def awaiting() -> list[ColumnElement[bool]]:
    """Episodes waiting for consolidation: pending or failed, not consolidated and not
    forgotten, whether expired or not."""
    return [
        ~Episode.consolidated,
        Episode.consolidation_status.in_(AWAITING),
        Episode.forgotten_at.is_(None),
    ]


def _pending(tenant_id: str | None) -> list[ColumnElement[bool]]:
    clauses = [
        *awaiting(),
        or_(Episode.next_attempt_at.is_(None), Episode.next_attempt_at <= func.now()),
    ]
    if tenant_id is not None:
        clauses.append(Episode.tenant_id == tenant_id)
    return clauses


async def pending_groups(session: AsyncSession, *, tenant_id: str | None) -> list[PendingGroup]:
    """(tenant, butler) groups with episodes due for consolidation (pending, or failed and past
    their backoff; expired ones too), oldest backlog first."""
    stmt = (
        select(Episode.tenant_id, Episode.butler, func.count())
        .where(*_pending(tenant_id))
        .group_by(Episode.tenant_id, Episode.butler)
        .order_by(func.min(Episode.created_at), Episode.tenant_id, Episode.butler)
    )
    rows = await session.execute(stmt)
    return [PendingGroup(tenant, butler, int(count)) for tenant, butler, count in rows]


def _group_key(tenant_id: str, butler: str) -> str:
    return f"consolidation:{tenant_id}:{butler}"


async def try_lock_group(conn: AsyncConnection, *, tenant_id: str, butler: str) -> bool:
    """Take the group's advisory lock in a transaction left open on `conn`; False (and the
    transaction ended) when another holds it.

    The transaction holds nothing but the lock (no snapshot, no row), so it guards the group
    while the model is called with no other transaction open; it ends with `unlock_group` or
    when the connection closes. Being transaction-scoped, the lock stays on one server
    connection behind a pooler in transaction mode (PgBouncer), where a session-level lock
    could be released on another.
    """
    stmt = text("SELECT pg_try_advisory_xact_lock(hashtextextended(:key, 0))")
    locked = bool((await conn.execute(stmt, {"key": _group_key(tenant_id, butler)})).scalar_one())
    if not locked:
        await conn.rollback()
    return locked


async def unlock_group(conn: AsyncConnection, *, tenant_id: str, butler: str) -> None:
    """Release the lock taken by `try_lock_group` (`tenant_id` and `butler` name the group
    it was taken for): its transaction ends."""
    await conn.rollback()


async def pending_episodes(
    session: AsyncSession, *, tenant_id: str, butler: str, limit: int
) -> list[Episode]:
    """The group's oldest episodes due for consolidation."""
    stmt = (
        select(Episode)
        .where(*_pending(tenant_id), Episode.butler == butler)
        .order_by(Episode.created_at, Episode.id)
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())


async def lock_still_pending(
    session: AsyncSession, *, tenant_id: str, episode_ids: list[uuid.UUID]
) -> list[uuid.UUID]:
    """Lock those of the tenant's episodes that still wait for consolidation (not
    consolidated nor forgotten meanwhile); their ids, oldest first."""
    stmt = (
        select(Episode.id)
        .where(Episode.tenant_id == tenant_id, Episode.id.in_(episode_ids), *awaiting())
        .order_by(Episode.created_at, Episode.id)
        .with_for_update()
    )
    return list((await session.execute(stmt)).scalars())


async def active_facts(
    session: AsyncSession, *, tenant_id: str, butler: str, limit: int
) -> list[Fact]:
    """Active facts visible to the butler (global or its scope), most important first."""
    stmt = (
        select(Fact)
        .where(
            Fact.tenant_id == tenant_id,
            Fact.validity == "active",
            Fact.scope.in_(["global", butler]),
        )
        .order_by(Fact.importance.desc(), Fact.created_at.desc(), Fact.id)
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())


async def active_rules(
    session: AsyncSession, *, tenant_id: str, butler: str, limit: int
) -> list[Rule]:
    """Live rules visible to the butler (global or its scope), newest first."""
    stmt = (
        select(Rule)
        .where(
            Rule.tenant_id == tenant_id,
            Rule.scope.in_(["global", butler]),
            Rule.forgotten_at.is_(None),
        )
        .order_by(Rule.created_at.desc(), Rule.id)
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())


async def mark_consolidated(
    session: AsyncSession, *, tenant_id: str, episode_ids: list[uuid.UUID]
) -> int:
    """consolidated = true, consolidation_status = 'consolidated', last_error and
    next_attempt_at cleared."""
    stmt = (
        update(Episode)
        .where(Episode.tenant_id == tenant_id, Episode.id.in_(episode_ids))
        .values(
            consolidated=True,
            consolidation_status="consolidated",
            last_error=None,
            next_attempt_at=None,
        )
        .execution_options(synchronize_session=False)
    )
    return int((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed episode is tried again: at the next job until `max_attempts` failures,
    then `backoff_seconds` later, doubled with each further failure up to `max_backoff_seconds`."""

    max_attempts: int
    backoff_seconds: float
    max_backoff_seconds: float


async def record_failure(
    session: AsyncSession,
    *,
    tenant_id: str,
    episode_ids: list[uuid.UUID],
    error: str,
    policy: RetryPolicy,
) -> tuple[int, int]:
    """retry_count + 1 and last_error; from `policy.max_attempts` failures on, 'failed' with
    a next_attempt_at that backs off exponentially up to its cap.

    Returns (still pending, failed).
    """
    attempts = Episode.retry_count + 1
    doublings = func.least(attempts - policy.max_attempts, 30)
    wait = func.least(
        policy.backoff_seconds * func.power(2.0, doublings), policy.max_backoff_seconds
    )
    exhausted = attempts >= policy.max_attempts
    # Epoch seconds bound: a distributed UPDATE takes no now(), nor `timestamptz + interval`
    # (STABLE), in a CASE; to_timestamp(float8) is IMMUTABLE.
    now = bindparam(None, (await transaction_now(session)).timestamp(), type_=Float)
    stmt = (
        update(Episode)
        .where(
            Episode.tenant_id == tenant_id,
            Episode.id.in_(episode_ids),
            ~Episode.consolidated,
            Episode.consolidation_status.in_(AWAITING),
        )
        .values(
            retry_count=attempts,
            last_error=error,
            consolidation_status=case((exhausted, "failed"), else_="pending"),
            next_attempt_at=case((exhausted, func.to_timestamp(now + wait)), else_=None),
        )
        .returning(Episode.consolidation_status)
        .execution_options(synchronize_session=False)
    )
    statuses = list((await session.execute(stmt)).scalars())
    failed = statuses.count("failed")
    return len(statuses) - failed, failed


def _unread_reflections(tenant_id: str | None, kind: str) -> list[ColumnElement[bool]]:
    read = select(ReflectionConsolidation.event_id).where(
        ReflectionConsolidation.tenant_id == AgentEvent.tenant_id,
        ReflectionConsolidation.event_id == AgentEvent.id,
    )
    clauses: list[ColumnElement[bool]] = [AgentEvent.kind == kind, ~read.exists()]
    if tenant_id is not None:
        clauses.append(AgentEvent.tenant_id == tenant_id)
    return clauses


async def reflection_groups(
    session: AsyncSession, *, tenant_id: str | None, kind: str
) -> list[PendingGroup]:
    """(tenant, ledger) groups with reflections consolidation has not read, oldest first;
    `butler` holds the ledger and `episodes` the count."""
    stmt = (
        select(AgentEvent.tenant_id, AgentEvent.ledger, func.count())
        .where(*_unread_reflections(tenant_id, kind))
        .group_by(AgentEvent.tenant_id, AgentEvent.ledger)
        .order_by(func.min(AgentEvent.created_at), AgentEvent.tenant_id, AgentEvent.ledger)
    )
    rows = await session.execute(stmt)
    return [PendingGroup(tenant, ledger, int(count)) for tenant, ledger, count in rows]


async def unread_reflections(
    session: AsyncSession, *, tenant_id: str, ledger: str, kind: str, limit: int
) -> list[AgentEvent]:
    """The ledger's oldest reflections consolidation has not read."""
    stmt = (
        select(AgentEvent)
        .where(*_unread_reflections(tenant_id, kind), AgentEvent.ledger == ledger)
        .order_by(AgentEvent.position)
        .limit(limit)
    )
    return list((await session.execute(stmt)).scalars())


async def mark_reflections_read(
    session: AsyncSession, *, tenant_id: str, event_ids: list[uuid.UUID]
) -> None:
    """Record that consolidation has read these reflections."""
    if event_ids:
        await session.execute(
            insert(ReflectionConsolidation)
            .values([{"event_id": event_id, "tenant_id": tenant_id} for event_id in event_ids])
            .on_conflict_do_nothing()
        )
