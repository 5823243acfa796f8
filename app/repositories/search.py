"""SQL of retrieval: the semantic and keyword candidate lists, row loading, reference bumps."""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Select,
    Text,
    and_,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import TSQUERY
from sqlalchemy.ext.asyncio import AsyncSession

from app.models import Episode, Fact, Passage, Rule
from app.models.passages import OWNER_COLUMNS
from app.repositories import keyword
from app.repositories.confidence import effective_confidence_sql
from app.repositories.memories import MODELS

Memory = Episode | Fact | Rule


@dataclass(frozen=True)
class RankedCandidate:
    """One row of a candidate list: its type, id, 1-based rank in that list and the leg's
    score (semantic: similarity; keyword: BM25; higher is better)."""

    memory_type: str
    memory_id: uuid.UUID
    rank: int
    score: float = 0.0


@dataclass(frozen=True)
class Filters:
    """Who may be seen: the tenant, the scope (None = all) and the confidence floor."""

    tenant_id: str
    scope: str | None
    min_confidence: float
    occurred: tuple[datetime, datetime] | None = None  # episodes only: [start, end)


def visibility_filters(memory_type: str, filters: Filters) -> list[ColumnElement[bool]]:
    """Tenant, scope and lifecycle filters of one memory type."""
    if memory_type == "episode":
        clauses: list[ColumnElement[bool]] = [
            Episode.tenant_id == filters.tenant_id,
            or_(Episode.expires_at.is_(None), Episode.expires_at > func.now()),
        ]
        if filters.scope is not None:
            clauses.append(Episode.butler == filters.scope)
        if filters.occurred is not None:
            clauses += [Episode.occurred_at >= filters.occurred[0],
                        Episode.occurred_at < filters.occurred[1]]
        return clauses
    model: type[Fact] | type[Rule] = Fact if memory_type == "fact" else Rule
    clauses = [model.tenant_id == filters.tenant_id]
    if memory_type == "fact":
        clauses.append(Fact.validity == "active")
    else:
        clauses.append(Rule.forgotten_at.is_(None))
    if filters.scope is not None:
        clauses.append(model.scope.in_(["global", filters.scope]))
    if filters.min_confidence > 0:
        # In SQL, so the threshold is applied before LIMIT.
        effective = effective_confidence_sql(model.confidence, model.decay_rate,
                                             model.last_confirmed_at)
        clauses.append(effective >= filters.min_confidence)
    return clauses


def or_tsquery(query: str) -> ColumnElement[Any]:
    """The query's english lexemes OR-ed together.

    plainto_tsquery parses any text safely (no operator syntax is interpreted) but ANDs its
    lexemes, so a natural-language question matches almost nothing. Its output joins quoted
    lexemes with ' & '; a lexeme never holds a space, so replacing ' & ' by ' | ' turns the
    operators, and only them, into ORs. The text form of a tsquery is valid tsquery input.
    """
    plain = func.plainto_tsquery(literal_column("'english'::regconfig"), query)
    return cast(func.replace(cast(plain, Text), " & ", " | "), TSQUERY)


def _semantic_leg(memory_type: str, filters: Filters, vector: list[float],
                  limit: int) -> Select[Any]:
    """The `limit` memories nearest to `vector`, by their own vector or their best passage's
    (`score` is the smaller cosine distance)."""
    model = MODELS[memory_type]
    distance = model.embedding.cosine_distance(vector)
    own = (
        select(model.id.label("id"), distance.label("score"))
        .where(*visibility_filters(memory_type, filters), model.embedding.is_not(None))
        .order_by(distance)
        .limit(limit)
    )
    owner = getattr(Passage, OWNER_COLUMNS[memory_type])
    passage_distance = Passage.embedding.cosine_distance(vector)
    windows = (
        select(owner.label("id"), passage_distance.label("score"))
        .join(model, model.id == owner)
        .where(Passage.tenant_id == filters.tenant_id, *visibility_filters(memory_type, filters))
        .order_by(passage_distance)
        .limit(limit)
    )
    both = union_all(own, windows).subquery(f"{memory_type}_nearest")
    best = func.min(both.c.score)
    return (
        select(literal(memory_type, Text).label("memory_type"), both.c.id, best.label("score"))
        .group_by(both.c.id)
        .order_by(best, both.c.id)
        .limit(limit)
    )


def _keyword_leg(memory_type: str, filters: Filters, query: str, limit: int) -> Select[Any]:
    return keyword.bm25_leg(memory_type, tenant_id=filters.tenant_id, scope=filters.scope,
                            visibility=visibility_filters(memory_type, filters), query=query,
                            limit=limit)


async def configure_vector_scan(session: AsyncSession, *, ef_search: int,
                                max_scan_tuples: int) -> None:
    """Let HNSW scans continue past filtered-out rows (pgvector 0.8), for this transaction."""
    await session.execute(
        text("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
             "set_config('hnsw.ef_search', :ef, true), "
             "set_config('hnsw.max_scan_tuples', :tuples, true)"),
        {"ef": str(ef_search), "tuples": str(max_scan_tuples)},
    )


async def candidate_lists(
    session: AsyncSession, *, types: Sequence[str], filters: Filters,
    vector: list[float] | None, query: str | None, limit: int,
) -> tuple[list[RankedCandidate], list[RankedCandidate]]:
    """The semantic and keyword candidate lists (each at most `limit` long) in one statement.

    Each leg takes the best `limit` rows of every type, then ranks their union; a leg is
    skipped when its input is None.
    """
    legs = []
    if vector is not None:
        legs.append(("semantic", [_semantic_leg(t, filters, vector, limit) for t in types]))
    if query is not None:
        legs.append(("keyword", [_keyword_leg(t, filters, query, limit) for t in types]))
    if not legs:
        return [], []
    ranked = []
    for name, parts in legs:
        pool = (union_all(*parts) if len(parts) > 1 else parts[0]).subquery(f"{name}_pool")
        position = func.row_number().over(order_by=(pool.c.score, pool.c.memory_type,
                                                    pool.c.id))
        ranked.append(
            select(literal(name, Text).label("leg"), pool.c.memory_type, pool.c.id,
                   position.label("position"), pool.c.score)
            .order_by(position).limit(limit)
        )
    stmt = union_all(*ranked) if len(ranked) > 1 else ranked[0]
    rows = (await session.execute(stmt)).all()
    def leg(name: str) -> list[RankedCandidate]:
        # Both legs order by ascending score: cosine distance, minus BM25.
        return [RankedCandidate(r.memory_type, r.id, r.position,
                                1.0 - r.score if name == "semantic" else -r.score)
                for r in rows if r.leg == name]

    return leg("semantic"), leg("keyword")


async def window_candidates(
    session: AsyncSession, *, filters: Filters, window: tuple[datetime, datetime],
    vector: list[float] | None, query: str | None, limit: int,
) -> list[RankedCandidate]:
    """Episodes that occurred inside `window`, ranked like the semantic leg (the keyword leg
    without a vector)."""
    inside = replace(filters, occurred=window)
    if vector is not None:
        leg = _semantic_leg("episode", inside, vector, limit)
    elif query is not None:
        leg = _keyword_leg("episode", inside, query, limit)
    else:
        return []
    rows = (await session.execute(leg)).all()
    return [RankedCandidate("episode", row.id, position) for position, row in enumerate(rows, 1)]


@dataclass(frozen=True)
class PassageMatch:
    """The passage of a memory nearest to the query (`window` or `context`)."""

    kind: str
    ordinal: int
    start_char: int
    end_char: int
    similarity: float


@dataclass(frozen=True)
class LoadedRow:
    """A row with its similarity to the query (its best passage's, when better) and
    keyword score."""

    row: Any  # a memory, or a run, run message or reflection (repositories/record_search)
    similarity: float | None
    keyword_score: float | None
    passage: PassageMatch | None


async def load_rows(
    session: AsyncSession, memory_type: str, *, tenant_id: str, ids: Sequence[uuid.UUID],
    vector: list[float] | None, query: str | None,
) -> dict[uuid.UUID, LoadedRow]:
    """Rows by id with their similarity to `vector`, their passage nearest to it, and the
    ts_rank_cd score for `query`."""
    model = MODELS[memory_type]
    similarity: ColumnElement[Any] = (
        (1 - model.embedding.cosine_distance(vector)) if vector is not None
        else literal(None, Float)
    )
    keyword_score: ColumnElement[Any] = (
        func.ts_rank_cd(model.search_vector, or_tsquery(query)) if query is not None
        else literal(None, Float)
    )
    stmt = select(model, similarity.label("similarity"), keyword_score.label("keyword_score"))
    if vector is not None:
        owner = getattr(Passage, OWNER_COLUMNS[memory_type])
        passage_distance = Passage.embedding.cosine_distance(vector)
        nearest = (
            select(Passage.kind, Passage.ordinal, Passage.start_char, Passage.end_char,
                   (1 - passage_distance).label("passage_similarity"))
            .where(owner == model.id)
            .order_by(passage_distance)
            .limit(1)
            .lateral("nearest_passage")
        )
        stmt = stmt.add_columns(nearest).outerjoin(nearest, true())
    stmt = stmt.where(model.tenant_id == tenant_id, model.id.in_(list(ids)))
    loaded = {}
    for row in await session.execute(stmt):
        memory, own_similarity = row[0], row.similarity
        passage = None
        if vector is not None and row.ordinal is not None:
            passage = PassageMatch(row.kind, row.ordinal, row.start_char, row.end_char,
                                   row.passage_similarity)
        best = own_similarity
        if passage is not None and (best is None or passage.similarity > best):
            best = passage.similarity
        else:
            passage = None
        loaded[memory.id] = LoadedRow(memory, best, row.keyword_score, passage)
    return loaded


async def bump_references(session: AsyncSession, memory_type: str, *, tenant_id: str,
                          ids: Sequence[uuid.UUID]) -> list[Memory]:
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


async def visible_ids(session: AsyncSession, memory_type: str, *, filters: Filters,
                      ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `ids` that search may show (tenant, scope, lifecycle, confidence)."""
    if not ids:
        return set()
    model = MODELS[memory_type]
    stmt = select(model.id).where(model.id.in_(list(ids)),
                                  *visibility_filters(memory_type, filters))
    return set((await session.execute(stmt)).scalars())
