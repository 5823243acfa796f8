"""SQL of retrieval: the semantic and keyword candidate lists, row loading, reference bumps."""

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    CTE,
    BindParameter,
    ColumnElement,
    Float,
    Integer,
    Select,
    Text,
    Uuid,
    and_,
    any_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, TIMESTAMP
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute, aliased
from sqlalchemy.sql.selectable import LateralFromClause

from app.core.scope import SCOPE_KEY, Scope, set_local
from app.core.text import CONTEXT_MAX_CHARS
from app.embedding.vectors import EmbeddingVector
from app.models import Episode, Fact, Passage, Rule
from app.models.passages import OWNER_COLUMNS
from app.models.vector import Vector
from app.repositories.confidence import effective_confidence_sql
from app.repositories.fact_time import held_at
from app.repositories.memories import MODELS
from app.repositories.memory_filters import compile_filter, filter_shape, filter_values
from app.repositories.search import keyword
from app.repositories.search.broad_filters import BROAD, broad_key
from app.repositories.search.keyword import or_tsquery, query_params
from app.schemas.filters import MemoryFilter

Memory = Episode | Fact | Rule
TIMESTAMPTZ = TIMESTAMP(timezone=True)

# How passages rank their memory in the semantic list when it is read on its own (semantic
# mode, rrf and weighted fusion). A window is a part of its memory, so the memory ranks by
# the window's distance plus WINDOW_DISTANCE_PENALTY: a memory that matches as a whole goes
# ahead of a long one with a passage on the question's subject, and a sentence deep in a
# long memory is still found when its window is nearer than the others by more than that.
# A context passage (a turn read after its session's earlier turns) ranks only turns of at
# most CONTEXT_MAX_CHARS: a longer turn's context holds mostly its neighbours. Full lifts put
# LongMemEval's long replies ahead of the turns that answer (bench/journal/2026-11.md,
# "Passages that rank their memory as a part").
WINDOW_DISTANCE_PENALTY = 0.1


@dataclass(frozen=True)
class PassageRanking:
    """How much a passage may move its memory in the semantic list."""

    window_penalty: float  # added to a window's cosine distance
    context_max_chars: int  # the longest turn whose context passage counts


AS_PARTS = PassageRanking(WINDOW_DISTANCE_PENALTY, CONTEXT_MAX_CHARS)
# The learned second stage reads a memory's own similarity and its best passage's as two
# signals, so its pool takes every passage in full.
IN_FULL = PassageRanking(0.0, 2**31 - 1)


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
    # Facts only: the versions that held at as_of as believed at known_at (None: now);
    # without as_of, the active ones.
    as_of: datetime | None = None
    known_at: datetime | None = None
    memory_filter: MemoryFilter | None = None  # the caller's filter (app/schemas/filters.py)
    # Types whose vectors are ranked exactly (a selective filter), not through HNSW.
    exact: frozenset[str] = frozenset()


def filter_params(filters: Filters) -> dict[str, Any]:
    """The values of the named parameters `visibility_filters` binds."""
    start, end = filters.occurred or (None, None)
    return {
        "tenant_id": filters.tenant_id,
        "scope": filters.scope,
        "min_confidence": filters.min_confidence,
        "occurred_start": start,
        "occurred_end": end,
        "as_of": filters.as_of,
        "known_at": filters.known_at,
        **filter_values(filters.memory_filter),
    }


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
            clauses += [
                Episode.occurred_at >= _param(filters, "occurred_start", TIMESTAMPTZ),
                Episode.occurred_at < _param(filters, "occurred_end", TIMESTAMPTZ),
            ]
        return clauses + compile_filter(memory_type, filters.memory_filter)
    model: type[Fact] | type[Rule] = Fact if memory_type == "fact" else Rule
    clauses = [model.tenant_id == tenant]
    if memory_type == "fact" and filters.as_of is not None:
        clauses += held_at(
            _param(filters, "as_of", TIMESTAMPTZ),
            None if filters.known_at is None else _param(filters, "known_at", TIMESTAMPTZ),
            ranked=True,
        )
    elif memory_type == "fact":
        clauses.append(Fact.validity == "active")
    else:
        clauses.append(Rule.forgotten_at.is_(None))
    if filters.scope is not None:
        clauses.append(or_(model.scope == "global", model.scope == scope))
    if filters.min_confidence > 0:
        # In SQL, so the threshold is applied before LIMIT.
        effective = effective_confidence_sql(
            model.confidence, model.decay_rate, model.last_confirmed_at
        )
        clauses.append(effective >= _param(filters, "min_confidence", Float))
    return clauses + compile_filter(memory_type, filters.memory_filter)


def _passage_scope(memory_type: str, filters: Filters) -> list[ColumnElement[bool]]:
    """The passages' own copy of the scope filter, which lets a small scope's passages be read
    through their (tenant_id, scope) index."""
    if filters.scope is None:
        return []
    scope = _param(filters, "scope", Text)
    if memory_type == "episode":
        return [Passage.scope == scope]
    return [or_(Passage.scope == "global", Passage.scope == scope)]


def _admitted_rows(
    memory_type: str, filters: Filters, vector: EmbeddingVector | None, query: str | None, name: str
) -> CTE:
    """Every memory of a type that `filters` admit, read once for both lists when they are
    ranked exactly: (memory_id, distance to `vector`, words: its tsvector when it holds a
    word of `query`)."""
    model = MODELS[memory_type]
    columns: list[ColumnElement[Any]] = [model.id.label("memory_id")]
    if vector is not None:
        columns.append(
            model.embedding.cosine_distance(bindparam("vector", vector, type_=Vector())).label(
                "distance"
            )
        )
    if query is not None:
        holds = model.search_vector.op("@@")(or_tsquery(bindparam("query", query, type_=Text)))
        columns.append(case((holds, model.search_vector)).label("words"))
    return (
        select(*columns)
        .where(*visibility_filters(memory_type, filters))
        .cte(f"{name}_admitted_rows")
        .prefix_with("MATERIALIZED")
    )


def _semantic_leg(
    memory_type: str,
    filters: Filters,
    vector: EmbeddingVector,
    limit: int,
    admitted: CTE | None = None,
) -> Select[Any]:
    """The `limit` memories nearest to `vector`, by their own vector or their best passage's
    (`score` is the smaller cosine distance, a passage's as `PassageRanking` says). `vector`,
    `limit`, `window_penalty` and `context_max_chars` are named parameters. With `admitted`
    (`_admitted_rows`), own vectors are ranked from it."""
    model = MODELS[memory_type]
    bound_vector = bindparam("vector", vector, type_=Vector())
    bound_limit = bindparam("limit", limit, type_=Integer)
    distance = model.embedding.cosine_distance(bound_vector)
    # An expression the HNSW index cannot answer: the admitted rows are found by their
    # other indexes and ranked by their exact distance.
    exact = memory_type in filters.exact
    own = (
        (
            select(model.id.label("id"), distance.label("score"))
            .where(*visibility_filters(memory_type, filters), model.embedding.is_not(None))
            .order_by(distance + 0.0 if exact else distance)
            .limit(bound_limit)
        )
        if admitted is None
        else (
            select(admitted.c.memory_id.label("id"), admitted.c.distance.label("score"))
            .where(admitted.c.distance.is_not(None))
            .order_by(admitted.c.distance)
            .limit(bound_limit)
        )
    )
    owner = getattr(Passage, OWNER_COLUMNS[memory_type])
    passage_distance = Passage.embedding.cosine_distance(bound_vector)
    penalty = case((Passage.kind == "window", bindparam("window_penalty", type_=Float)), else_=0.0)
    counted = or_(
        Passage.kind != "context", Passage.end_char <= bindparam("context_max_chars", type_=Integer)
    )
    windows = (
        select(owner.label("id"), (passage_distance + penalty).label("score"))
        .join(model, model.id == owner)
        .where(
            Passage.tenant_id == _param(filters, "tenant_id", Text),
            # Names the owner column, so the type's own HNSW index (mem_044) can serve the walk.
            owner.is_not(None),
            counted,
            *_passage_scope(memory_type, filters),
            *visibility_filters(memory_type, filters),
        )
        .order_by(passage_distance + 0.0 if exact else passage_distance)
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


def _keyword_leg(
    memory_type: str,
    filters: Filters,
    query: str,
    limit: int,
    prefix: str | None = None,
    admitted: CTE | None = None,
    neighbours: CTE | None = None,
) -> Select[Any]:
    """The BM25 leg; `query` and `limit` are the named parameters of the same names. With
    `admitted` (`_admitted_rows`), only its memories are scored, each exactly; else the
    semantic leg's `neighbours` (its `id`s) are scored beside the postings walk's."""
    return keyword.bm25_leg(
        memory_type,
        tenant_id=_param(filters, "tenant_id", Text),
        scope=None if filters.scope is None else _param(filters, "scope", Text),
        scope_is_global=filters.scope == "global",
        visibility=visibility_filters(memory_type, filters),
        query=bindparam("query", query, type_=Text),
        limit=bindparam("limit", limit, type_=Integer),
        prefix=prefix,
        admitted=admitted,
        neighbours=neighbours,
    )


async def configure_vector_scan(
    session: AsyncSession, *, ef_search: int, max_scan_tuples: int
) -> None:
    """Let HNSW scans continue past filtered-out rows (pgvector 0.8) and plan every statement
    for its own values, for this transaction (set with its first statement if it has not
    begun)."""
    # Custom plans: a generic plan of a cached statement cannot see the LIMIT and may trade
    # the HNSW scan of passages for a scan of every row.
    await set_local(
        session,
        {
            "hnsw.iterative_scan": "relaxed_order",
            "hnsw.ef_search": str(ef_search),
            "hnsw.max_scan_tuples": str(max_scan_tuples),
            "plan_cache_mode": "force_custom_plan",
        },
    )


@dataclass(frozen=True)
class CandidateShape:
    """What the SQL of a candidate statement depends on; every value is a bound parameter."""

    types: tuple[str, ...]
    semantic: bool
    keyword: bool
    scope: Literal["all", "global", "one"]
    min_confidence: bool
    occurred: bool
    window: bool
    fact_time: Literal["now", "as_of", "known_at"] = "now"
    memory_filter: Any = None  # the caller's filter's shape (memory_filters.filter_shape)
    exact: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls, types: Sequence[str], filters: Filters, *, semantic: bool, keyword: bool, window: bool
    ) -> "CandidateShape":
        """The shape of a request's candidate statement."""
        scope: Literal["all", "global", "one"] = (
            "all" if filters.scope is None else "global" if filters.scope == "global" else "one"
        )
        fact_time: Literal["now", "as_of", "known_at"] = (
            "now" if filters.as_of is None else "as_of" if filters.known_at is None else "known_at"
        )
        return cls(
            tuple(types),
            semantic,
            keyword,
            scope,
            filters.min_confidence > 0,
            filters.occurred is not None,
            window,
            fact_time,
            filter_shape(filters.memory_filter),
            filters.exact,
        )


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

    row: Any  # a memory, or a run, run message or reflection (repositories/search/record_sql.py)
    similarity: float | None
    keyword_score: float | None
    passage: PassageMatch | None
    own_similarity: float | None = None  # of the row's own vector, passages aside


LEGS = ("semantic", "keyword", "time")
PASSAGE_COLUMNS = ("kind", "ordinal", "start_char", "end_char", "passage_similarity")
_CANDIDATE_COLUMNS = 2 + 2 * len(LEGS)  # memory_type, id, then each leg's rank and score

# Building the statement costs more than running it (tens of ms of SQLAlchemy expression
# work), so one is built per shape and reused with new parameter values.
_CANDIDATE_STATEMENTS: dict[CandidateShape, Select[Any]] = {}
_MAX_CACHED_SHAPES = 256


def _ranked_legs(
    types: Sequence[str],
    filters: Filters,
    vector: EmbeddingVector | None,
    query: str | None,
    limit: int,
    window: tuple[datetime, datetime] | None,
) -> list[Select[Any]]:
    """Each leg's best `limit` memories, ranked: (leg, memory_type, id, position, score).

    The semantic and keyword legs take the best `limit` rows of every type, then rank their
    union; the keyword leg also scores the semantic leg's memories (`{type}_semantic_top`).
    The time leg ranks the episodes that occurred inside `window` like the semantic leg (like
    the keyword leg without a vector)."""
    legs = []
    admitted = {
        t: _admitted_rows(t, filters, vector, query, t) for t in filters.exact if t in types
    }
    nearest: dict[str, CTE] = {}
    if vector is not None:
        nearest = {
            t: _semantic_leg(t, filters, vector, limit, admitted.get(t))
            .cte(f"{t}_semantic_top")
            .prefix_with("MATERIALIZED")
            for t in types
        }
        legs.append(("semantic", [select(*nearest[t].c) for t in types]))
    if query is not None:
        legs.append(
            (
                "keyword",
                [
                    _keyword_leg(
                        t,
                        filters,
                        query,
                        limit,
                        admitted=admitted.get(t),
                        neighbours=nearest.get(t),
                    )
                    for t in types
                ],
            )
        )
    if window is not None:
        legs.append(("time", [_time_leg(filters, vector, query, limit, window)]))
    return [_ranked_leg(name, parts, limit) for name, parts in legs]


def _time_leg(
    filters: Filters,
    vector: EmbeddingVector | None,
    query: str | None,
    limit: int,
    window: tuple[datetime, datetime],
) -> Select[Any]:
    """The episodes that occurred inside `window`, by the semantic leg's order (the keyword
    leg's without a vector)."""
    inside = replace(filters, occurred=window)
    if vector is not None:
        return _semantic_leg("episode", inside, vector, limit)
    return _keyword_leg(
        "episode",
        inside,
        query or "",
        limit,
        prefix="time_episode",
        admitted=_admitted_rows("episode", inside, None, query, "time_episode")
        if "episode" in filters.exact
        else None,
    )


def _ranked_leg(name: str, parts: list[Select[Any]], limit: int) -> Select[Any]:
    """One leg's best `limit` rows of the union of its `parts`, ranked by score."""
    pool = (union_all(*parts) if len(parts) > 1 else parts[0]).subquery(f"{name}_pool")
    position = func.row_number().over(order_by=(pool.c.score, pool.c.memory_type, pool.c.id))
    return (
        select(
            literal(name, Text).label("leg"),
            pool.c.memory_type,
            pool.c.id,
            position.label("position"),
            pool.c.score,
        )
        .order_by(position)
        .limit(bindparam("limit", limit, type_=Integer))
    )


def _first(columns: Sequence[ColumnElement[Any]]) -> ColumnElement[Any]:
    return columns[0] if len(columns) == 1 else func.coalesce(*columns)


def _candidate_statement(
    types: Sequence[str],
    filters: Filters,
    vector: EmbeddingVector | None,
    query: str | None,
    limit: int,
    window: tuple[datetime, datetime] | None,
) -> Select[Any]:
    """One row per memory in any leg: its rank and score in each leg, and its row with its
    similarity to `vector`, its nearest passage and its ts_rank_cd for `query`."""
    shape = CandidateShape.of(
        types,
        filters,
        semantic=vector is not None,
        keyword=query is not None,
        window=window is not None,
    )
    cached = _CANDIDATE_STATEMENTS.get(shape)
    if cached is not None:
        return cached
    ranked = _ranked_legs(types, filters, vector, query, limit, window)
    found = (union_all(*ranked) if len(ranked) > 1 else ranked[0]).subquery("found")
    per_leg = []
    for name in LEGS:
        in_leg = found.c.leg == name
        per_leg += [
            func.min(found.c.position).filter(in_leg).label(f"{name}_rank"),
            func.min(found.c.score).filter(in_leg).label(f"{name}_leg_score"),
        ]
    candidate = (
        select(found.c.memory_type, found.c.id, *per_leg)
        .group_by(found.c.memory_type, found.c.id)
        .subquery("candidate")
    )
    bound_vector = bindparam("vector", vector, type_=Vector())
    tenant = _param(filters, "tenant_id", Text)
    similarities, keyword_scores = [], []
    passages: list[list[ColumnElement[Any]]] = []
    stmt = select(*candidate.c)
    for memory_type in types:
        row = aliased(MODELS[memory_type], name=f"{memory_type}_row")
        stmt = stmt.add_columns(row).outerjoin(
            row,
            and_(
                candidate.c.memory_type == memory_type,
                row.id == candidate.c.id,
                row.tenant_id == tenant,
            ),
        )
        if query is not None:
            keyword_scores.append(
                func.ts_rank_cd(
                    row.search_vector, or_tsquery(bindparam("query", query, type_=Text))
                )
            )
        if vector is not None:
            similarities.append(1 - row.embedding.cosine_distance(bound_vector))
            nearest = _nearest_passage(
                memory_type, row.id, tenant, bound_vector, f"{memory_type}_passage"
            )
            stmt = stmt.outerjoin(nearest, true())
            passages.append([nearest.c[name] for name in PASSAGE_COLUMNS])
    stmt = stmt.add_columns(
        (_first(similarities) if similarities else literal(None, Float)).label("similarity"),
        (_first(keyword_scores) if keyword_scores else literal(None, Float)).label("keyword_score"),
        *(
            _first([columns[index] for columns in passages]).label(name)
            for index, name in enumerate(PASSAGE_COLUMNS)
            if passages
        ),
    )
    if len(_CANDIDATE_STATEMENTS) < _MAX_CACHED_SHAPES:
        _CANDIDATE_STATEMENTS[shape] = stmt
    return stmt


@dataclass(frozen=True)
class Candidates:
    """A search's candidate lists (the time leg: episodes inside the query's window) and the
    row of every memory in them."""

    semantic: list[RankedCandidate]
    keyword: list[RankedCandidate]
    window: list[RankedCandidate]
    rows: dict[tuple[str, uuid.UUID], LoadedRow]

    def cut(self, limit: int) -> "Candidates":
        """The lists cut to their first `limit` (the rows kept whole)."""

        def first(ranked: list[RankedCandidate]) -> list[RankedCandidate]:
            return [c for c in ranked if c.rank <= limit]

        return Candidates(first(self.semantic), first(self.keyword), first(self.window), self.rows)

    def ranked_as_parts(self) -> bool:
        """Whether each row's similarity is the one `AS_PARTS` ranks it by: no window
        lifted it, nor the context passage of a turn longer than CONTEXT_MAX_CHARS (read
        `IN_FULL`, such a row would rank otherwise)."""
        for loaded in self.rows.values():
            passage, own = loaded.passage, loaded.own_similarity
            if (
                passage is None
                or loaded.similarity is None
                or (own is not None and loaded.similarity <= own)
            ):
                continue
            if passage.kind == "window" or passage.end_char > CONTEXT_MAX_CHARS:
                return False
        return True


NO_CANDIDATES = Candidates([], [], [], {})


async def search_candidates(
    session: AsyncSession,
    *,
    types: Sequence[str],
    filters: Filters,
    vector: EmbeddingVector | None,
    query: str | None,
    limit: int,
    window: tuple[datetime, datetime] | None = None,
    passages: PassageRanking = AS_PARTS,
    language: str | None = None,
) -> Candidates:
    """The candidate lists (each at most `limit` long) and their rows, in one statement.

    A leg is skipped when its input is None; the time leg runs when `window` is given;
    `passages` says how far a passage moves its memory in the semantic and time lists;
    `language` is the query's when the request gives it (app/core/languages.py).
    """
    if not types or (vector is None and query is None):
        return NO_CANDIDATES
    stmt = _candidate_statement(types, filters, vector, query, limit, window)
    start, end = window or filters.occurred or (None, None)
    params = {
        **filter_params(filters),
        "occurred_start": start,
        "occurred_end": end,
        "vector": vector,
        **query_params(query, language),
        "limit": limit,
        "window_penalty": passages.window_penalty,
        "context_max_chars": passages.context_max_chars,
    }
    lists: dict[str, list[RankedCandidate]] = {name: [] for name in LEGS}
    rows: dict[tuple[str, uuid.UUID], LoadedRow] = {}
    for found in await session.execute(stmt, params):
        key = (found.memory_type, found.id)
        for name in LEGS:
            rank = getattr(found, f"{name}_rank")
            if rank is not None:
                lists[name].append(
                    RankedCandidate(
                        *key, rank, _leg_score(name, getattr(found, f"{name}_leg_score"))
                    )
                )
        for memory in found[_CANDIDATE_COLUMNS : _CANDIDATE_COLUMNS + len(types)]:
            if memory is not None:
                rows[key] = loaded_row(
                    memory, found.similarity, found.keyword_score, _passage(found, vector)
                )
    for ranked in lists.values():
        ranked.sort(key=lambda c: c.rank)
    return Candidates(lists["semantic"], lists["keyword"], lists["time"], rows)


def _leg_score(leg: str, score: float) -> float:
    """A leg's score, higher is better: every leg orders by ascending cosine distance or minus
    BM25. (The time leg's order is all fusion reads of it.)"""
    return 1.0 - score if leg == "semantic" else -score if leg == "keyword" else 0.0


def _passage(found: Any, vector: EmbeddingVector | None) -> PassageMatch | None:
    """The nearest passage a row was read with (`PASSAGE_COLUMNS`), if any."""
    if vector is None or found.ordinal is None:
        return None
    return PassageMatch(
        found.kind, found.ordinal, found.start_char, found.end_char, found.passage_similarity
    )


def _nearest_passage(
    memory_type: str,
    owner_id: QueryableAttribute[Any],
    tenant: ColumnElement[str],
    vector: BindParameter[Any],
    name: str,
) -> LateralFromClause:
    """A lateral subquery: the passage of the tenant's memory `owner_id` nearest to `vector`
    (`PASSAGE_COLUMNS`), none when it has none."""
    owner = getattr(Passage, OWNER_COLUMNS[memory_type])
    distance = Passage.embedding.cosine_distance(vector)
    return (
        select(
            Passage.kind,
            Passage.ordinal,
            Passage.start_char,
            Passage.end_char,
            (1 - distance).label("passage_similarity"),
        )
        .where(owner == owner_id, Passage.tenant_id == tenant)
        .order_by(distance)
        .limit(1)
        .lateral(name)
    )


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
        if keyword
        else literal(None, Float)
    )
    stmt = select(model, similarity.label("similarity"), keyword_score.label("keyword_score"))
    if semantic:
        nearest = _nearest_passage(
            memory_type, model.id, bindparam("tenant_id", type_=Text), vector, "nearest_passage"
        )
        stmt = stmt.add_columns(nearest).outerjoin(nearest, true())
    return stmt.where(
        model.tenant_id == bindparam("tenant_id", type_=Text),
        model.id == any_(bindparam("ids", type_=ARRAY(Uuid))),
    )


async def load_rows(
    session: AsyncSession,
    memory_type: str,
    *,
    tenant_id: str,
    ids: Sequence[uuid.UUID],
    vector: EmbeddingVector | None,
    query: str | None,
    language: str | None = None,
) -> dict[uuid.UUID, LoadedRow]:
    """Rows by id with their similarity to `vector`, their passage nearest to it, and the
    ts_rank_cd score for `query`."""
    stmt = _load_statement(memory_type, vector is not None, query is not None)
    params = {
        "tenant_id": tenant_id,
        "ids": list(ids),
        "vector": vector,
        **query_params(query, language),
    }
    loaded = {}
    for row in await session.execute(stmt, params):
        loaded[row[0].id] = loaded_row(
            row[0], row.similarity, row.keyword_score, _passage(row, vector)
        )
    return loaded


def loaded_row(
    memory: Any,
    own_similarity: float | None,
    keyword_score: float | None,
    passage: PassageMatch | None,
) -> LoadedRow:
    """A row with its best similarity: its own, or its passage's when better (and then that
    passage)."""
    if passage is not None and (own_similarity is None or passage.similarity > own_similarity):
        return LoadedRow(memory, passage.similarity, keyword_score, passage, own_similarity)
    return LoadedRow(memory, own_similarity, keyword_score, None, own_similarity)


async def admitted_counts(
    session: AsyncSession, types: Sequence[str], *, filters: Filters, cap: int
) -> dict[str, int]:
    """How many memories of each type search may show, counted up to `cap` (one statement)."""
    counts = []
    for memory_type in types:
        admitted = (
            select(literal(1))
            .select_from(MODELS[memory_type])
            .where(*visibility_filters(memory_type, filters))
            .limit(cap)
            .subquery(f"{memory_type}_admitted")
        )
        counts.append(
            select(func.count()).select_from(admitted).scalar_subquery().label(memory_type)
        )
    row = (await session.execute(select(*counts), filter_params(filters))).one()
    return {memory_type: int(count) for memory_type, count in zip(types, row, strict=True)}


async def with_exact_types(
    session: AsyncSession, types: Sequence[str], filters: Filters, *, below: int
) -> Filters:
    """`filters` with `exact` naming the types of which the caller's filter admits fewer than
    `below` memories (their vectors are then ranked exactly); as given without a filter or
    with `below` 0."""
    if filters.memory_filter is None or not below:
        return filters
    scope: Scope | None = session.info.get(SCOPE_KEY)
    params, shape = filter_params(filters), filter_shape(filters.memory_filter)
    keys = {t: broad_key(t, params, scope.butlers if scope else (), shape, below) for t in types}
    known = {t: BROAD.get(keys[t]) for t in types}
    uncounted = [t for t in types if known[t] is None]
    counts = (
        await admitted_counts(session, uncounted, filters=filters, cap=below) if uncounted else {}
    )
    for memory_type, count in counts.items():
        known[memory_type] = count >= below
        BROAD.remember(keys[memory_type], count >= below)
    return replace(filters, exact=frozenset(t for t in types if not known[t]))


async def visible_ids(
    session: AsyncSession, memory_type: str, *, filters: Filters, ids: Sequence[uuid.UUID]
) -> set[uuid.UUID]:
    """Those of `ids` that search may show (tenant, scope, lifecycle, confidence)."""
    if not ids:
        return set()
    model = MODELS[memory_type]
    stmt = select(model.id).where(
        model.id.in_(list(ids)), *visibility_filters(memory_type, filters)
    )
    return set((await session.execute(stmt)).scalars())
