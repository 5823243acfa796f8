"""SQL of task runs, their messages and feedback."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Float, exists, func, insert, null, select, union_all, update
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.models import Run, RunFeedback, RunMessage
from app.repositories import pagination
from app.repositories.filters import equal, rows_by_id
from app.repositories.memories import (
    insert_rows,
    search_columns,
)
from app.repositories.memory_filters import compile_filter
from app.schemas.filters import MemoryFilter

# A row that belongs to one run: a message or a feedback.
PartT = TypeVar("PartT", RunMessage, RunFeedback)

# Nearest rows each leg of the run search reads per result asked for.
POOL_FACTOR = 4


@dataclass(frozen=True)
class RunFilters:
    """What a run listing or search keeps; None means any."""

    task_id: str | None = None
    success: bool | None = None
    agent_version: str | None = None
    max_rating: float | None = None
    memory_filter: MemoryFilter | None = None  # a listing's `filter` (app/schemas/filters.py)


def _where(filters: RunFilters, tenant_id: str) -> list[Any]:
    clauses: list[Any] = [
        Run.tenant_id == tenant_id,
        *equal(Run, filters, "task_id", "agent_version"),
    ]
    if filters.success is not None:
        clauses.append(Run.success.is_(filters.success))
    if filters.max_rating is not None:
        clauses.append(
            exists().where(
                RunFeedback.run_id == Run.id,
                RunFeedback.tenant_id == tenant_id,
                RunFeedback.rating <= filters.max_rating,
            )
        )
    return clauses


async def update_run(
    session: AsyncSession,
    *,
    tenant_id: str,
    run_id: uuid.UUID,
    values: dict[str, Any],
    search_text: str | None,
) -> Run | None:
    """Set columns of the tenant's run; a new `search_text` rewrites its tsvector."""
    extra = await search_columns(search_text) if search_text is not None else {}
    stmt = (
        update(Run)
        .where(Run.id == run_id, Run.tenant_id == tenant_id)
        .values(**values, **extra)
        .returning(Run)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_runs(
    session: AsyncSession, *, tenant_id: str, filters: RunFilters, limit: int, cursor: str | None
) -> tuple[list[Run], str | None]:
    """A page of the tenant's runs matching `filters`, newest first."""
    stmt = select(Run).where(
        *_where(filters, tenant_id), *compile_filter("run", filters.memory_filter)
    )
    return await pagination.list_page(
        session, stmt, order=(Run.created_at, Run.id), limit=limit, cursor=cursor
    )


async def insert_messages(
    session: AsyncSession, rows: Sequence[dict[str, Any]]
) -> list[RunMessage]:
    """Insert messages (each with a `search_text`) and return them in order."""
    return await insert_rows(session, RunMessage, rows)


async def _of_runs(
    session: AsyncSession,
    model: type[PartT],
    *,
    tenant_id: str,
    run_ids: Sequence[uuid.UUID],
    order: Sequence[Any],
) -> list[PartT]:
    if not run_ids:
        return []
    stmt = (
        select(model)
        .where(model.tenant_id == tenant_id, model.run_id.in_(list(run_ids)))
        .order_by(*order)
    )
    return list((await session.execute(stmt)).scalars())


async def messages_of(
    session: AsyncSession, *, tenant_id: str, run_ids: Sequence[uuid.UUID]
) -> list[RunMessage]:
    """The messages of these runs, in append order."""
    return await _of_runs(
        session, RunMessage, tenant_id=tenant_id, run_ids=run_ids, order=[RunMessage.position]
    )


async def insert_feedback(session: AsyncSession, values: dict[str, Any]) -> RunFeedback:
    """Insert one feedback row and return it."""
    return (
        await session.execute(insert(RunFeedback).values(**values).returning(RunFeedback))
    ).scalar_one()


async def feedback_of(
    session: AsyncSession, *, tenant_id: str, run_ids: Sequence[uuid.UUID]
) -> list[RunFeedback]:
    """The feedback of these runs, oldest first."""
    return await _of_runs(
        session,
        RunFeedback,
        tenant_id=tenant_id,
        run_ids=run_ids,
        order=[RunFeedback.created_at, RunFeedback.id],
    )


@dataclass(frozen=True)
class RunMatch:
    """A run found by search: its best similarity and the message that gave it, if any."""

    run_id: uuid.UUID
    similarity: float
    message_id: uuid.UUID | None


async def similar_runs(
    session: AsyncSession,
    *,
    tenant_id: str,
    filters: RunFilters,
    vector: EmbeddingVector,
    limit: int,
) -> list[RunMatch]:
    """Runs by the best cosine similarity of the run or any of its messages to `vector`.

    Each leg takes its `limit * POOL_FACTOR` nearest rows through the HNSW index, then the
    runs are ranked by their best hit.
    """
    pool = limit * POOL_FACTOR
    run_distance = Run.embedding.cosine_distance(vector)
    run_leg = (
        select(
            Run.id.label("run_id"),
            null().cast(UUID(as_uuid=True)).label("message_id"),
            run_distance.label("distance"),
        )
        .where(*_where(filters, tenant_id), Run.embedding.is_not(None))
        .order_by(run_distance)
        .limit(pool)
    )
    message_distance = RunMessage.embedding.cosine_distance(vector)
    message_leg = (
        select(
            RunMessage.run_id, RunMessage.id.label("message_id"), message_distance.label("distance")
        )
        .join(Run, Run.id == RunMessage.run_id)
        .where(
            RunMessage.tenant_id == tenant_id,
            RunMessage.embedding.is_not(None),
            *_where(filters, tenant_id),
        )
        .order_by(message_distance)
        .limit(pool)
    )
    hits = union_all(run_leg, message_leg).subquery("run_hits")
    best = select(
        hits.c.run_id,
        hits.c.message_id,
        hits.c.distance,
        func.row_number()
        .over(
            partition_by=hits.c.run_id, order_by=(hits.c.distance, hits.c.message_id.nulls_first())
        )
        .label("n"),
    ).subquery("best")
    stmt = (
        select(
            best.c.run_id, best.c.message_id, (1 - best.c.distance).cast(Float).label("similarity")
        )
        .where(best.c.n == 1)
        .order_by(best.c.distance, best.c.run_id)
        .limit(limit)
    )
    return [
        RunMatch(row.run_id, float(row.similarity), row.message_id)
        for row in (await session.execute(stmt)).all()
    ]


async def get_runs(
    session: AsyncSession, *, tenant_id: str, run_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, Run]:
    """The tenant's runs by id."""
    return await rows_by_id(session, Run, tenant_id=tenant_id, ids=run_ids)


async def get_messages(
    session: AsyncSession, *, tenant_id: str, message_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, RunMessage]:
    """The tenant's messages by id."""
    return await rows_by_id(session, RunMessage, tenant_id=tenant_id, ids=message_ids)


async def messages_to_scrub(
    session: AsyncSession, *, tenant_id: str | None, after: int, rescan: bool, limit: int
) -> list[RunMessage]:
    """The next `limit` messages after position `after` (all tenants when None) that the
    scrub has not checked yet, or every one with `rescan`."""
    stmt = select(RunMessage).where(RunMessage.position > after)
    if tenant_id is not None:
        stmt = stmt.where(RunMessage.tenant_id == tenant_id)
    if not rescan:
        stmt = stmt.where(RunMessage.scrubbed_at.is_(None))
    return list((await session.execute(stmt.order_by(RunMessage.position).limit(limit))).scalars())


async def mark_scrubbed(session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID]) -> None:
    """Record that the scrub checked these messages."""
    if ids:
        await session.execute(
            update(RunMessage)
            .where(RunMessage.tenant_id == tenant_id, RunMessage.id.in_(list(ids)))
            .values(scrubbed_at=func.now())
        )


async def rewrite_message(
    session: AsyncSession,
    *,
    tenant_id: str,
    message_id: uuid.UUID,
    old_content: str,
    content: str,
    vectors: dict[str, Any],
    search_text: str,
) -> bool:
    """Replace a message's content (and its vectors) unless it changed since it was read."""
    stmt = (
        update(RunMessage)
        .where(
            RunMessage.tenant_id == tenant_id,
            RunMessage.id == message_id,
            RunMessage.content == old_content,
        )
        .values(
            content=content,
            **vectors,
            **(await search_columns(search_text)),
            scrubbed_at=func.now(),
        )
    )
    return bool((await session.execute(stmt)).rowcount)  # type: ignore[attr-defined]


async def unlearned_failures(
    session: AsyncSession,
    *,
    tenant_id: str,
    max_rating: float,
    run_id: uuid.UUID | None,
    limit: int,
) -> list[tuple[RunFeedback, Run]]:
    """Critic feedback with a rationale, rated at most `max_rating`, on runs marked failed,
    that has not become a rule yet; locked (SKIP LOCKED) for the caller's transaction."""
    stmt = (
        select(RunFeedback, Run)
        .join(Run, Run.id == RunFeedback.run_id)
        .where(
            RunFeedback.tenant_id == tenant_id,
            Run.tenant_id == tenant_id,
            RunFeedback.source == "critic",
            RunFeedback.rating <= max_rating,
            RunFeedback.lesson_rule_id.is_(None),
            RunFeedback.rationale.is_not(None),
            func.length(func.btrim(RunFeedback.rationale)) > 0,
            Run.success.is_(False),
        )
        .order_by(RunFeedback.created_at, RunFeedback.id)
        .limit(limit)
        .with_for_update(of=RunFeedback, skip_locked=True)
    )
    if run_id is not None:
        stmt = stmt.where(Run.id == run_id)
    return [(row[0], row[1]) for row in (await session.execute(stmt)).all()]


async def set_lesson_rule(
    session: AsyncSession, *, tenant_id: str, feedback_id: uuid.UUID, rule_id: uuid.UUID
) -> None:
    """Record the rule a feedback became."""
    await session.execute(
        update(RunFeedback)
        .where(RunFeedback.tenant_id == tenant_id, RunFeedback.id == feedback_id)
        .values(lesson_rule_id=rule_id)
    )


def _finished_before(seconds: float) -> Any:
    return Run.finished_at < func.now() - func.make_interval(0, 0, 0, 0, 0, 0, seconds)


async def tenants_with_runs_finished_before(session: AsyncSession, *, seconds: float) -> list[str]:
    """Every tenant holding a run finished more than `seconds` ago."""
    stmt = select(Run.tenant_id).distinct().where(_finished_before(seconds)).order_by(Run.tenant_id)
    return list((await session.execute(stmt)).scalars())


async def runs_finished_before(
    session: AsyncSession, *, tenant_id: str, seconds: float, limit: int
) -> list[uuid.UUID]:
    """Up to `limit` of the tenant's runs finished more than `seconds` ago, locked (SKIP
    LOCKED) for the caller's transaction, oldest first."""
    stmt = (
        select(Run.id)
        .where(Run.tenant_id == tenant_id, _finished_before(seconds))
        .order_by(Run.finished_at, Run.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return list((await session.execute(stmt)).scalars())
