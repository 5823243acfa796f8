"""References counted by reads served from a replica, written to the primary in batches."""

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.memories import MODELS


async def add_references(session: AsyncSession, memory_type: str, *, tenant_id: str,
                         ids: Sequence[uuid.UUID], counts: Sequence[int],
                         at: Sequence[datetime]) -> None:
    """Add `counts[i]` references to row `ids[i]`, last referenced at the later of its own
    time and `at[i]`; one statement for the batch (rows deleted since are skipped)."""
    table = MODELS[memory_type].__tablename__
    await session.execute(text(
        f'UPDATE "{table}" AS m SET reference_count = m.reference_count + v.n,'
        " last_referenced_at = greatest(m.last_referenced_at, v.at)"
        " FROM unnest(CAST(:ids AS uuid[]), CAST(:counts AS int[]),"
        " CAST(:at AS timestamptz[])) AS v(id, n, at)"
        " WHERE m.tenant_id = :tenant_id AND m.id = v.id"),
        {"ids": list(ids), "counts": list(counts), "at": list(at), "tenant_id": tenant_id})
