"""procedures: insert, lookups, atomic execution counters, version chain, search legs."""

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Procedure
from app.repositories import pagination
from app.repositories.filters import equal
from app.repositories.memory_filters import compile_filter
from app.repositories.rows import update_stamped
from app.repositories.search.record_tables import RecordQuery
from app.schemas.filters import MemoryFilter


@dataclass(frozen=True)
class ProcedureFilters:
    """What a procedure listing or search keeps; None means any."""

    agent_id: str | None = None
    name: str | None = None
    status: str | None = None
    include_superseded: bool = False
    memory_filter: MemoryFilter | None = None  # a listing's `filter` (app/schemas/filters.py)


def _filtered(tenant_id: str, filters: ProcedureFilters) -> list[ColumnElement[bool]]:
    clauses = [
        Procedure.tenant_id == tenant_id,
        *equal(Procedure, filters, "agent_id", "name", "status"),
    ]
    if not filters.include_superseded:
        clauses.append(Procedure.superseded_by.is_(None))
    return clauses


async def current_named(
    session: AsyncSession, *, tenant_id: str, agent_id: str, name: str
) -> Procedure | None:
    """The agent's current (not superseded) procedure of this name."""
    stmt = select(Procedure).where(
        *_filtered(tenant_id, ProcedureFilters(agent_id=agent_id, name=name))
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_procedures(
    session: AsyncSession,
    *,
    tenant_id: str,
    filters: ProcedureFilters,
    limit: int,
    cursor: str | None,
) -> tuple[list[Procedure], str | None]:
    """A page of the tenant's procedures matching `filters`, newest first."""
    stmt = select(Procedure).where(
        *_filtered(tenant_id, filters), *compile_filter("procedure", filters.memory_filter)
    )
    return await pagination.list_page(
        session, stmt, order=(Procedure.created_at, Procedure.id), limit=limit, cursor=cursor
    )


async def versions(
    session: AsyncSession, *, tenant_id: str, agent_id: str, name: str
) -> list[Procedure]:
    """Every version of the agent's procedure of this name, oldest first."""
    stmt = (
        select(Procedure)
        .where(
            Procedure.tenant_id == tenant_id, Procedure.agent_id == agent_id, Procedure.name == name
        )
        .order_by(Procedure.version)
    )
    return list((await session.execute(stmt)).scalars())


async def record_execution(
    session: AsyncSession,
    *,
    tenant_id: str,
    procedure_id: uuid.UUID,
    success: bool,
    duration_ms: int | None,
) -> Procedure | None:
    """Count one execution of a current (not superseded) version in a single UPDATE ...
    RETURNING (None when absent or superseded).

    The counters are incremented by the database, so concurrent executions never lose one;
    a version superseded while the UPDATE waits for its row is not counted.
    """
    timed = duration_ms is not None
    stmt = (
        update(Procedure)
        .where(
            Procedure.id == procedure_id,
            Procedure.tenant_id == tenant_id,
            Procedure.superseded_by.is_(None),
        )
        .values(
            execution_count=Procedure.execution_count + 1,
            success_count=Procedure.success_count + (1 if success else 0),
            timed_count=Procedure.timed_count + (1 if timed else 0),
            total_duration_ms=Procedure.total_duration_ms + (duration_ms or 0),
            last_executed_at=func.now(),
        )
        .returning(Procedure)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def update_procedure(
    session: AsyncSession, *, tenant_id: str, procedure_id: uuid.UUID, values: dict[str, Any]
) -> Procedure:
    """Apply `values` (and updated_at = now()) to one procedure and return it."""
    return await update_stamped(
        session, Procedure, tenant_id=tenant_id, row_id=procedure_id, values=values
    )


def search_query(*, tenant_id: str, filters: ProcedureFilters) -> RecordQuery:
    """A procedure search keeping the tenant's procedures that match `filters`."""
    return RecordQuery(Procedure, "procedure", tenant_id, _filtered(tenant_id, filters))
