"""Search SQL shared by the record tables searched on their own (procedures, arcs): nearest
by cosine distance, matching by ts_rank_cd of the OR-ed query lexemes, and loading with both
scores. Each table's own module says which rows a search keeps (its `clauses`)."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Float, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.repositories.search.candidates import RankedCandidate, or_tsquery


@dataclass(frozen=True)
class RecordQuery:
    """One search of a record table: the model, the type its candidates carry, the tenant and
    the clauses that keep a row."""

    model: Any
    record_type: str
    tenant_id: str
    clauses: Sequence[ColumnElement[bool]]


async def nearest(
    session: AsyncSession, query: RecordQuery, vector: EmbeddingVector, limit: int
) -> list[RankedCandidate]:
    """The kept rows nearest to `vector`, best first."""
    model = query.model
    stmt = (
        select(model.id)
        .where(*query.clauses, model.embedding.is_not(None))
        .order_by(model.embedding.cosine_distance(vector), model.id)
        .limit(limit)
    )
    return _ranked(query.record_type, (await session.execute(stmt)).scalars())


async def matching(
    session: AsyncSession, query: RecordQuery, text: str, limit: int
) -> list[RankedCandidate]:
    """The kept rows matching any lexeme of `text`, by ts_rank_cd, best first."""
    model, tsquery = query.model, or_tsquery(text)
    stmt = (
        select(model.id)
        .where(*query.clauses, model.search_vector.op("@@")(tsquery))
        .order_by(func.ts_rank_cd(model.search_vector, tsquery).desc(), model.id)
        .limit(limit)
    )
    return _ranked(query.record_type, (await session.execute(stmt)).scalars())


async def load_scored(
    session: AsyncSession,
    query: RecordQuery,
    ids: Sequence[uuid.UUID],
    vector: EmbeddingVector | None,
    text: str | None,
) -> dict[uuid.UUID, tuple[Any, Any, Any]]:
    """Rows by id with their similarity to `vector` and ts_rank_cd for `text`."""
    model = query.model
    similarity: ColumnElement[Any] = (
        1 - model.embedding.cosine_distance(vector) if vector is not None else literal(None, Float)
    )
    keyword: ColumnElement[Any] = (
        func.ts_rank_cd(model.search_vector, or_tsquery(text))
        if text is not None
        else literal(None, Float)
    )
    stmt = select(model, similarity.label("similarity"), keyword.label("keyword")).where(
        model.tenant_id == query.tenant_id, model.id.in_(list(ids))
    )
    return {row[0].id: (row[0], row.similarity, row.keyword) for row in await session.execute(stmt)}


def _ranked(record_type: str, ids: Any) -> list[RankedCandidate]:
    return [
        RankedCandidate(record_type, record_id, rank) for rank, record_id in enumerate(ids, start=1)
    ]
