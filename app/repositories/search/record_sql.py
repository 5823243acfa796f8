"""Search candidates of the records that are not memories: runs, run messages, reflections.

One source per type, each ranked on its own (semantic: cosine distance through the HNSW
index; keyword: ts_rank_cd of the OR-ed query lexemes over the row's tsvector), so the memory
search SQL (BM25 over the memories' postings) is untouched.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Float, Select, Text, func, literal, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.models import AgentEvent, Run, RunMessage
from app.repositories.search.candidates import RankedCandidate, or_tsquery

Record = Run | RunMessage | AgentEvent
REFLECTION_KIND = "agent.reflected"


@dataclass(frozen=True)
class Source:
    """A searchable record type: its table and what of it is searchable."""

    model: type[Run] | type[RunMessage] | type[AgentEvent]

    def where(self, tenant_id: str) -> list[ColumnElement[bool]]:
        """Tenant filter, plus the kind for reflections."""
        clauses: list[ColumnElement[bool]] = [self.model.tenant_id == tenant_id]
        if self.model is AgentEvent:
            clauses.append(AgentEvent.kind == REFLECTION_KIND)
        return clauses


SOURCES = {"run": Source(Run), "run_message": Source(RunMessage), "reflection": Source(AgentEvent)}
TYPES = tuple(SOURCES)


def _semantic(search_type: str, tenant_id: str, vector: EmbeddingVector, limit: int) -> Select[Any]:
    source = SOURCES[search_type]
    distance = source.model.embedding.cosine_distance(vector)
    return (
        select(
            literal(search_type, Text).label("memory_type"),
            source.model.id,
            distance.label("score"),
        )
        .where(*source.where(tenant_id), source.model.embedding.is_not(None))
        .order_by(distance)
        .limit(limit)
    )


def _keyword(
    search_type: str, tenant_id: str, query: str, limit: int, language: str | None
) -> Select[Any]:
    source = SOURCES[search_type]
    tsquery = or_tsquery(query, language=language)
    rank = -func.ts_rank_cd(source.model.search_vector, tsquery)
    return (
        select(
            literal(search_type, Text).label("memory_type"), source.model.id, rank.label("score")
        )
        .where(*source.where(tenant_id), source.model.search_vector.op("@@")(tsquery))
        .order_by(rank)
        .limit(limit)
    )


async def _ranked(
    session: AsyncSession, parts: list[Select[Any]], limit: int, name: str
) -> list[RankedCandidate]:
    if not parts:
        return []
    pool = (union_all(*parts) if len(parts) > 1 else parts[0]).subquery(name)
    stmt = (
        select(pool.c.memory_type, pool.c.id, pool.c.score)
        .order_by(pool.c.score, pool.c.memory_type, pool.c.id)
        .limit(limit)
    )
    rows = (await session.execute(stmt)).all()
    # Scores are ascending distances (or minus ts_rank_cd); candidates carry higher-is-better.
    return [
        RankedCandidate(row.memory_type, row.id, position, score=-float(row.score))
        for position, row in enumerate(rows, 1)
    ]


async def candidate_lists(
    session: AsyncSession,
    *,
    types: Sequence[str],
    tenant_id: str,
    vector: EmbeddingVector | None,
    query: str | None,
    limit: int,
    language: str | None = None,
) -> tuple[list[RankedCandidate], list[RankedCandidate]]:
    """The semantic and keyword candidate lists of the record types (each at most `limit`;
    `language`: the query's, when the request gives it)."""
    semantic = (
        await _ranked(
            session,
            [_semantic(t, tenant_id, vector, limit) for t in types],
            limit,
            "record_semantic",
        )
        if vector is not None
        else []
    )
    keyword = (
        await _ranked(
            session,
            [_keyword(t, tenant_id, query, limit, language) for t in types],
            limit,
            "record_keyword",
        )
        if query is not None
        else []
    )
    return semantic, keyword


async def load_rows(
    session: AsyncSession,
    search_type: str,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    vector: EmbeddingVector | None,
    query: str | None,
    language: str | None = None,
) -> dict[uuid.UUID, tuple[Record, float | None, float | None]]:
    """Rows by id with their similarity to `vector` and ts_rank_cd score for `query`."""
    source = SOURCES[search_type]
    model = source.model
    similarity: ColumnElement[Any] = (
        (1 - model.embedding.cosine_distance(vector))
        if vector is not None
        else literal(None, Float)
    )
    keyword_score: ColumnElement[Any] = (
        func.ts_rank_cd(model.search_vector, or_tsquery(query, language=language))
        if query is not None
        else literal(None, Float)
    )
    stmt = select(
        model, similarity.label("similarity"), keyword_score.label("keyword_score")
    ).where(*source.where(tenant_id), model.id.in_(list(ids)))
    result = await session.execute(stmt)
    return {row[0].id: (row[0], row.similarity, row.keyword_score) for row in result}
