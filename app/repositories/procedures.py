"""procedures: insert, lookups, atomic execution counters, version chain, search legs."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Float, func, insert, literal, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.models import Procedure
from app.repositories import pagination
from app.repositories.filters import equal
from app.repositories.memories import to_tsvector
from app.retrieval.candidates import RankedCandidate, or_tsquery


@dataclass(frozen=True)
class ProcedureFilters:
    """What a procedure listing or search keeps; None means any."""

    agent_id: str | None = None
    name: str | None = None
    status: str | None = None
    include_superseded: bool = False


def _filtered(tenant_id: str, filters: ProcedureFilters) -> list[ColumnElement[bool]]:
    clauses = [Procedure.tenant_id == tenant_id,
               *equal(Procedure, filters, "agent_id", "name", "status")]
    if not filters.include_superseded:
        clauses.append(Procedure.superseded_by.is_(None))
    return clauses


async def insert_procedure(session: AsyncSession, *, values: dict[str, Any],
                           search_text: str) -> Procedure:
    """Insert one procedure (with the tsvector of `search_text`) and return it."""
    stmt = (insert(Procedure).values(**values, search_vector=to_tsvector(search_text))
            .returning(Procedure))
    return (await session.execute(stmt)).scalar_one()


async def get(session: AsyncSession, *, tenant_id: str, procedure_id: uuid.UUID,
              for_update: bool = False) -> Procedure | None:
    """One procedure of the tenant, optionally locked FOR UPDATE."""
    stmt = select(Procedure).where(Procedure.id == procedure_id,
                                   Procedure.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def current_named(session: AsyncSession, *, tenant_id: str, agent_id: str,
                        name: str) -> Procedure | None:
    """The agent's current (not superseded) procedure of this name."""
    stmt = select(Procedure).where(*_filtered(tenant_id, ProcedureFilters(agent_id=agent_id,
                                                                           name=name)))
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_procedures(session: AsyncSession, *, tenant_id: str, filters: ProcedureFilters,
                          limit: int, cursor: str | None) -> tuple[list[Procedure], str | None]:
    """A page of the tenant's procedures matching `filters`, newest first."""
    stmt = select(Procedure).where(*_filtered(tenant_id, filters))
    return await pagination.list_page(session, stmt, order=(Procedure.created_at, Procedure.id),
                                      limit=limit, cursor=cursor)


async def versions(session: AsyncSession, *, tenant_id: str, agent_id: str,
                   name: str) -> list[Procedure]:
    """Every version of the agent's procedure of this name, oldest first."""
    stmt = (select(Procedure)
            .where(Procedure.tenant_id == tenant_id, Procedure.agent_id == agent_id,
                   Procedure.name == name)
            .order_by(Procedure.version))
    return list((await session.execute(stmt)).scalars())


async def record_execution(session: AsyncSession, *, tenant_id: str, procedure_id: uuid.UUID,
                           success: bool, duration_ms: int | None) -> Procedure | None:
    """Count one execution of a current (not superseded) version in a single UPDATE ...
    RETURNING (None when absent or superseded).

    The counters are incremented by the database, so concurrent executions never lose one;
    a version superseded while the UPDATE waits for its row is not counted.
    """
    timed = duration_ms is not None
    stmt = (
        update(Procedure)
        .where(Procedure.id == procedure_id, Procedure.tenant_id == tenant_id,
               Procedure.superseded_by.is_(None))
        .values(execution_count=Procedure.execution_count + 1,
                success_count=Procedure.success_count + (1 if success else 0),
                timed_count=Procedure.timed_count + (1 if timed else 0),
                total_duration_ms=Procedure.total_duration_ms + (duration_ms or 0),
                last_executed_at=func.now())
        .returning(Procedure)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def update_procedure(session: AsyncSession, *, procedure_id: uuid.UUID,
                           values: dict[str, Any]) -> Procedure:
    """Apply `values` (and updated_at = now()) to one procedure and return it."""
    stmt = (
        update(Procedure)
        .where(Procedure.id == procedure_id)
        .values(**values, updated_at=func.now())
        .returning(Procedure)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one()


async def semantic_candidates(session: AsyncSession, *, tenant_id: str,
                              filters: ProcedureFilters, vector: EmbeddingVector,
                              limit: int) -> list[RankedCandidate]:
    """The procedures nearest to `vector`, best first."""
    distance = Procedure.embedding.cosine_distance(vector)
    stmt = (select(Procedure.id)
            .where(*_filtered(tenant_id, filters), Procedure.embedding.is_not(None))
            .order_by(distance, Procedure.id).limit(limit))
    ids = (await session.execute(stmt)).scalars()
    return [RankedCandidate("procedure", pid, rank) for rank, pid in enumerate(ids, start=1)]


async def keyword_candidates(session: AsyncSession, *, tenant_id: str,
                             filters: ProcedureFilters, query: str,
                             limit: int) -> list[RankedCandidate]:
    """The procedures matching any of the query's lexemes, by ts_rank_cd, best first."""
    tsquery = or_tsquery(query)
    score = func.ts_rank_cd(Procedure.search_vector, tsquery)
    stmt = (select(Procedure.id)
            .where(*_filtered(tenant_id, filters), Procedure.search_vector.op("@@")(tsquery))
            .order_by(score.desc(), Procedure.id).limit(limit))
    ids = (await session.execute(stmt)).scalars()
    return [RankedCandidate("procedure", pid, rank) for rank, pid in enumerate(ids, start=1)]


async def load_scored(session: AsyncSession, *, tenant_id: str, ids: Sequence[uuid.UUID],
                      vector: EmbeddingVector | None,
                      query: str | None) -> dict[uuid.UUID, tuple[Procedure, Any, Any]]:
    """Procedures by id with their similarity to `vector` and ts_rank_cd for `query`."""
    similarity: ColumnElement[Any] = (
        1 - Procedure.embedding.cosine_distance(vector) if vector is not None
        else literal(None, Float))
    keyword: ColumnElement[Any] = (
        func.ts_rank_cd(Procedure.search_vector, or_tsquery(query)) if query is not None
        else literal(None, Float))
    stmt = select(Procedure, similarity.label("similarity"), keyword.label("keyword")).where(
        Procedure.tenant_id == tenant_id, Procedure.id.in_(list(ids)))
    rows = await session.execute(stmt)
    return {row[0].id: (row[0], row.similarity, row.keyword) for row in rows}


