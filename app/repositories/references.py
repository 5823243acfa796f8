"""Reference counts of memories that reads return (recall, context, get).

A read in `app/reads.read_transaction` (recall and context, and every read on a replica)
writes no count itself: it shows each count as it will be and keeps the references in its
session; the request hands them to the process's `services/references.ReferenceQueue`, which
writes them to the primary in batches (`add_references`). Elsewhere (a get on the primary,
work outside a request) a read counts its references in its own transaction, as one UPDATE.
"""

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from app.core.clock import now_utc
from app.models import Episode, Fact, Rule
from app.repositories.memories import MODELS

# session.info keys: the replica a read session runs on, the references it counted, and
# (for a read whose references the queue writes) how many of a memory's wait in the queue.
REPLICA_KEY = "engram_replica"
PENDING_KEY = "engram_pending_references"
QUEUED_KEY = "engram_queued_references"

Memory = Episode | Fact | Rule
Pending = list[tuple[str, str, uuid.UUID, datetime]]
Queued = Callable[[str, str, uuid.UUID], int]  # tenant, memory type, id -> references waiting


def on_replica(session: AsyncSession) -> bool:
    """True when `session` reads from a replica (it cannot write)."""
    return session.info.get(REPLICA_KEY) is not None


async def count(
    session: AsyncSession, memory_type: str, *, tenant_id: str, rows: Sequence[Any]
) -> None:
    """Count one reference on each of `rows` (memories of one type); the rows show it, with
    the references that wait in the queue."""
    if not rows:
        return
    queued: Queued | None = session.info.get(QUEUED_KEY)
    if queued is None and not on_replica(session):
        await bump_references(
            session, memory_type, tenant_id=tenant_id, ids=[row.id for row in rows]
        )
        return
    now = now_utc()
    pending: Pending = session.info.setdefault(PENDING_KEY, [])
    for row in rows:
        waiting = 0 if queued is None else queued(tenant_id, memory_type, row.id)
        # Shown, not flushed: the transaction writes nothing.
        set_committed_value(row, "reference_count", row.reference_count + waiting + 1)
        set_committed_value(row, "last_referenced_at", now)
        pending.append((tenant_id, memory_type, row.id, now))


def take_pending(session: AsyncSession) -> Pending:
    """The references a replica read counted (and forget them)."""
    pending: Pending = session.info.pop(PENDING_KEY, [])
    return pending


async def bump_references(
    session: AsyncSession, memory_type: str, *, tenant_id: str, ids: Sequence[uuid.UUID]
) -> list[Memory]:
    """Count one reference on every row of `ids` in a single UPDATE; return the rows."""
    if not ids:
        return []
    model = MODELS[memory_type]
    stmt = (
        update(model)
        .where(and_(model.tenant_id == tenant_id, model.id.in_(list(ids))))
        .values(reference_count=model.reference_count + 1, last_referenced_at=func.now())
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    rows: list[Memory] = list((await session.execute(stmt)).scalars())  # type: ignore[arg-type]
    return rows


async def add_references(
    session: AsyncSession,
    memory_type: str,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    counts: Sequence[int],
    at: Sequence[datetime],
) -> None:
    """Add `counts[i]` references to row `ids[i]`, last referenced at the later of its own
    time and `at[i]`; one statement for the batch (rows deleted since are skipped)."""
    table = MODELS[memory_type].__tablename__
    await session.execute(
        text(
            f'UPDATE "{table}" AS m SET reference_count = m.reference_count + v.n,'
            " last_referenced_at = greatest(m.last_referenced_at, v.at)"
            " FROM unnest(CAST(:ids AS uuid[]), CAST(:counts AS int[]),"
            " CAST(:at AS timestamptz[])) AS v(id, n, at)"
            " WHERE m.tenant_id = :tenant_id AND m.id = v.id"
        ),
        {"ids": list(ids), "counts": list(counts), "at": list(at), "tenant_id": tenant_id},
    )
