"""SQL of retrieval: the semantic and keyword candidate lists, row loading, reference bumps."""

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    CompoundSelect,
    Float,
    Integer,
    Select,
    Text,
    Uuid,
    and_,
    any_,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    or_,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, TIMESTAMP, TSQUERY
from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding.vectors import EmbeddingVector
from app.models import Episode, Fact, Passage, Rule
from app.models.passages import OWNER_COLUMNS
from app.models.vector import Vector
from app.repositories import keyword
from app.repositories.confidence import effective_confidence_sql
from app.repositories.memories import MODELS
from app.scope import set_local

Memory = Episode | Fact | Rule
TIMESTAMPTZ = TIMESTAMP(timezone=True)


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


def filter_params(filters: Filters) -> dict[str, Any]:
    """The values of the named parameters `visibility_filters` binds."""
    start, end = filters.occurred or (None, None)
    return {"tenant_id": filters.tenant_id, "scope": filters.scope,
            "min_confidence": filters.min_confidence, "occurred_start": start,
            "occurred_end": end}


def _param(filters: Filters, name: str, type_: Any) -> BindParameter[Any]:
    return bindparam(name, filter_params(filters)[name], type_=type_)


def visibility_filters(memory_type: str, filters: Filters) -> list[ColumnElement[bool]]:
    """Tenant, scope and lifecycle filters of one memory type.

    Values are named parameters (`filter_params`), so a statement built once serves every
    request whose filters have the same shape (`CandidateShape`).
    """
    tenant = _param(filters, "tenant_id", Text)
    scope = _param(filters, "scope", Text)
    if memory_type == "episode":
        clauses: list[ColumnElement[bool]] = [
            Episode.tenant_id == tenant,
            or_(Episode.expires_at.is_(None), Episode.expires_at > func.now()),
        ]
        if filters.scope is not None:
            clauses.append(Episode.butler == scope)
        if filters.occurred is not None:
            clauses += [Episode.occurred_at >= _param(filters, "occurred_start", TIMESTAMPTZ),
                        Episode.occurred_at < _param(filters, "occurred_end", TIMESTAMPTZ)]
        return clauses
    model: type[Fact] | type[Rule] = Fact if memory_type == "fact" else Rule
    clauses = [model.tenant_id == tenant]
    if memory_type == "fact":
        clauses.append(Fact.validity == "active")
    else:
        clauses.append(Rule.forgotten_at.is_(None))
    if filters.scope is not None:
        clauses.append(or_(model.scope == "global", model.scope == scope))
    if filters.min_confidence > 0:
        # In SQL, so the threshold is applied before LIMIT.
        effective = effective_confidence_sql(model.confidence, model.decay_rate,
                                             model.last_confirmed_at)
        clauses.append(effective >= _param(filters, "min_confidence", Float))
    return clauses


def or_tsquery(query: str | ColumnElement[str]) -> ColumnElement[Any]:
    """The query's english lexemes OR-ed together.

    plainto_tsquery parses any text safely (no operator syntax is interpreted) but ANDs its
    lexemes, so a natural-language question matches almost nothing. Its output joins quoted
    lexemes with ' & '; a lexeme never holds a space, so replacing ' & ' by ' | ' turns the
    operators, and only them, into ORs. The text form of a tsquery is valid tsquery input.
    """
    plain = func.plainto_tsquery(literal_column("'english'::regconfig"), query)
    return cast(func.replace(cast(plain, Text), " & ", " | "), TSQUERY)


def _passage_scope(memory_type: str, filters: Filters) -> list[ColumnElement[bool]]:
    """The passages' own copy of the scope filter, which lets a small scope's passages be read
    through their (tenant_id, scope) index."""
    if filters.scope is None:
        return []
    scope = _param(filters, "scope", Text)
    if memory_type == "episode":
        return [Passage.scope == scope]
    return [or_(Passage.scope == "global", Passage.scope == scope)]


def _semantic_leg(memory_type: str, filters: Filters, vector: EmbeddingVector,
                  limit: int) -> Select[Any]:
    """The `limit` memories nearest to `vector`, by their own vector or their best passage's
    (`score` is the smaller cosine distance). `vector` and `limit` are the named parameters
    of the same names."""
    model = MODELS[memory_type]
    bound_vector = bindparam("vector", vector, type_=Vector())
    bound_limit = bindparam("limit", limit, type_=Integer)
    distance = model.embedding.cosine_distance(bound_vector)
    own = (
        select(model.id.label("id"), distance.label("score"))
        .where(*visibility_filters(memory_type, filters), model.embedding.is_not(None))
        .order_by(distance)
        .limit(bound_limit)
    )
    owner = getattr(Passage, OWNER_COLUMNS[memory_type])
    passage_distance = Passage.embedding.cosine_distance(bound_vector)
    windows = (
        select(owner.label("id"), passage_distance.label("score"))
        .join(model, model.id == owner)
        .where(Passage.tenant_id == _param(filters, "tenant_id", Text),
               *_passage_scope(memory_type, filters),
               *visibility_filters(memory_type, filters))
        .order_by(passage_distance)
        .limit(bound_limit)
    )
    both = union_all(own, windows).subquery(f"{memory_type}_nearest")
    best = func.min(both.c.score)
    return (
        select(literal(memory_type, Text).label("memory_type"), both.c.id, best.label("score"))
        .group_by(both.c.id)
        .order_by(best, both.c.id)
        .limit(bound_limit)
    )


def _keyword_leg(memory_type: str, filters: Filters, query: str, limit: int) -> Select[Any]:
    """The BM25 leg; `query` and `limit` are the named parameters of the same names."""
    return keyword.bm25_leg(memory_type, tenant_id=_param(filters, "tenant_id", Text),
                            scope=None if filters.scope is None else _param(filters, "scope",
                                                                            Text),
                            scope_is_global=filters.scope == "global",
                            visibility=visibility_filters(memory_type, filters),
                            query=bindparam("query", query, type_=Text),
                            limit=bindparam("limit", limit, type_=Integer))


async def configure_vector_scan(session: AsyncSession, *, ef_search: int,
                                max_scan_tuples: int) -> None:
    """Let HNSW scans continue past filtered-out rows (pgvector 0.8) and plan every statement
    for its own values, for this transaction (set with its first statement if it has not
    begun)."""
    # Custom plans: a generic plan of a cached statement cannot see the LIMIT and may trade
    # the HNSW scan of passages for a scan of every row.
    await set_local(session, {"hnsw.iterative_scan": "relaxed_order",
                              "hnsw.ef_search": str(ef_search),
                              "hnsw.max_scan_tuples": str(max_scan_tuples),
                              "plan_cache_mode": "force_custom_plan"})


@dataclass(frozen=True)
class CandidateShape:
    """What the SQL of a candidate statement depends on; every value is a bound parameter."""

    types: tuple[str, ...]
    semantic: bool
    keyword: bool
    scope: Literal["all", "global", "one"]
    min_confidence: bool
    occurred: bool

    @classmethod
    def of(cls, types: Sequence[str], filters: Filters, *, semantic: bool,
           keyword: bool) -> "CandidateShape":
        """The shape of a request's candidate statement."""
        scope: Literal["all", "global", "one"] = (
            "all" if filters.scope is None else "global" if filters.scope == "global"
            else "one")
        return cls(tuple(types), semantic, keyword, scope, filters.min_confidence > 0,
                   filters.occurred is not None)


# Building the statement costs more than running it (tens of ms of SQLAlchemy expression
# work), so one is built per shape and reused with new parameter values.
_CANDIDATE_STATEMENTS: dict[CandidateShape, CompoundSelect[Any] | Select[Any]] = {}
_MAX_CACHED_SHAPES = 256


def _candidate_statement(types: Sequence[str], filters: Filters, vector: EmbeddingVector | None,
                         query: str | None, limit: int) -> CompoundSelect[Any] | Select[Any]:
    shape = CandidateShape.of(types, filters, semantic=vector is not None,
                              keyword=query is not None)
    cached = _CANDIDATE_STATEMENTS.get(shape)
    if cached is not None:
        return cached
    legs = []
    if vector is not None:
        legs.append(("semantic", [_semantic_leg(t, filters, vector, limit) for t in types]))
    if query is not None:
        legs.append(("keyword", [_keyword_leg(t, filters, query, limit) for t in types]))
    ranked = []
    for name, parts in legs:
        pool = (union_all(*parts) if len(parts) > 1 else parts[0]).subquery(f"{name}_pool")
        position = func.row_number().over(order_by=(pool.c.score, pool.c.memory_type,
                                                    pool.c.id))
        ranked.append(
            select(literal(name, Text).label("leg"), pool.c.memory_type, pool.c.id,
                   position.label("position"), pool.c.score)
            .order_by(position).limit(bindparam("limit", limit, type_=Integer))
        )
    stmt = union_all(*ranked) if len(ranked) > 1 else ranked[0]
    if len(_CANDIDATE_STATEMENTS) < _MAX_CACHED_SHAPES:
        _CANDIDATE_STATEMENTS[shape] = stmt
    return stmt


async def candidate_lists(
    session: AsyncSession, *, types: Sequence[str], filters: Filters,
    vector: EmbeddingVector | None, query: str | None, limit: int,
) -> tuple[list[RankedCandidate], list[RankedCandidate]]:
    """The semantic and keyword candidate lists (each at most `limit` long) in one statement.

    Each leg takes the best `limit` rows of every type, then ranks their union; a leg is
    skipped when its input is None.
    """
    if vector is None and query is None:
        return [], []
    stmt = _candidate_statement(types, filters, vector, query, limit)
    params = {**filter_params(filters), "vector": vector, "query": query, "limit": limit}
    rows = (await session.execute(stmt, params)).all()
    def leg(name: str) -> list[RankedCandidate]:
        # Both legs order by ascending score: cosine distance, minus BM25.
        return [RankedCandidate(r.memory_type, r.id, r.position,
                                1.0 - r.score if name == "semantic" else -r.score)
                for r in rows if r.leg == name]

    return leg("semantic"), leg("keyword")


async def window_candidates(
    session: AsyncSession, *, filters: Filters, window: tuple[datetime, datetime],
    vector: EmbeddingVector | None, query: str | None, limit: int,
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


@functools.cache
def _load_statement(memory_type: str, semantic: bool, keyword: bool) -> Select[Any]:
    """Rows by id (`ids`) with their similarity to `vector` and its nearest passage, and their
    ts_rank_cd for `query`: one statement per shape, values bound at execution."""
    model = MODELS[memory_type]
    vector = bindparam("vector", type_=Vector())
    similarity: ColumnElement[Any] = (
        (1 - model.embedding.cosine_distance(vector)) if semantic else literal(None, Float)
    )
    keyword_score: ColumnElement[Any] = (
        func.ts_rank_cd(model.search_vector, or_tsquery(bindparam("query", type_=Text)))
        if keyword else literal(None, Float)
    )
    stmt = select(model, similarity.label("similarity"), keyword_score.label("keyword_score"))
    if semantic:
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
    return stmt.where(model.tenant_id == bindparam("tenant_id", type_=Text),
                      model.id == any_(bindparam("ids", type_=ARRAY(Uuid))))


async def load_rows(
    session: AsyncSession, memory_type: str, *, tenant_id: str, ids: Sequence[uuid.UUID],
    vector: EmbeddingVector | None, query: str | None,
) -> dict[uuid.UUID, LoadedRow]:
    """Rows by id with their similarity to `vector`, their passage nearest to it, and the
    ts_rank_cd score for `query`."""
    stmt = _load_statement(memory_type, vector is not None, query is not None)
    params = {"tenant_id": tenant_id, "ids": list(ids), "vector": vector, "query": query}
    loaded = {}
    for row in await session.execute(stmt, params):
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
