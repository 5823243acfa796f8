"""SQL of the BM25 keyword leg, read from the postings kept by revision mem_010's triggers.

score(d) = sum over the query's lexemes t in d of
    idf(t) * engram_bm25_tf(tf, doc_len, avgdl),
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)),
with N, df and avgdl from the searched corpus: the tenant's (keyword_corpus, keyword_terms) for
a search of every scope, else the searched scopes' (keyword_scope_corpus, keyword_scope_terms,
summed over the scope and, for facts and rules, 'global'), so that a scoped search weighs its
words by what that scope holds, not by what the tenant's other scopes hold; and
engram_bm25_tf = tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl)), k1 = 1.2, b = 0.75.
Documents are tokenised by `to_tsvector` with their own language's configuration
(app/core/languages.py), the query with each of its configurations, both segmented alike.

Top candidates without scoring every match: for each query lexeme only its
`postings_per_term` visible postings of highest impact are kept, from at most
`postings_scanned` read (an ordered btree scan that stops there), so a common lexeme costs
the same at 1k and 1M memories and a filter that refuses most memories cannot lengthen the
walk. The candidates are ranked by the part of their score those postings give; the best
`RESCORED_PER_LIMIT * limit` of them, with the semantic list's memories in a hybrid search,
are then scored exactly over every query lexeme (primary-key probes) and the top `limit`
kept. A memory reaches the list through a lexeme it ranks high for, which is what BM25
rewards, or by its meaning: one holding several common query words ranks high for none of
them, and is found by its vector.
"""

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    CTE,
    ColumnElement,
    CompoundSelect,
    Float,
    Integer,
    Select,
    Text,
    and_,
    any_,
    bindparam,
    case,
    cast,
    func,
    literal,
    or_,
    select,
    true,
    union,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSQUERY
from sqlalchemy.sql.elements import BindParameter, Grouping
from sqlalchemy.sql.expression import FromClause

from app.core.languages import DEFAULT_CONFIG, SIMPLE_CONFIG, keyword_query
from app.models import (
    KeywordCorpus,
    KeywordPosting,
    KeywordScopeCorpus,
    KeywordScopeTerm,
    KeywordTerm,
)
from app.repositories.memories import MODELS, to_tsvector

POSTINGS_PER_TERM = 100
POSTINGS_SCANNED_PER_TERM = 500
RESCORED_PER_LIMIT = 3


QUERY_CONFIGS = "query_configs"
# A query's readings: a table of its configurations, each configuration, the text it reads.
Readings = tuple[FromClause, ColumnElement[Any], ColumnElement[Any]]


def _configs(
    query: str | ColumnElement[str], configs: Sequence[str] | None, language: str | None = None
) -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    """The query text and its configurations as SQL: a text is read here (`keyword_query`,
    in `language` when given); an expression is a query already read, its configurations
    bound as `query_configs`."""
    if isinstance(query, str):
        read = keyword_query(query, language)
        query, configs = literal(read.text, Text), read.configs
    # Unbound, a query is read as one of unknown language is.
    bound = (
        bindparam(QUERY_CONFIGS, [DEFAULT_CONFIG, SIMPLE_CONFIG], type_=ARRAY(Text))
        if configs is None
        else literal(list(configs), ARRAY(Text))
    )
    return query, bound


def query_params(query: str | None, language: str | None = None) -> dict[str, Any]:
    """The values statements built with a bound query read: the query as keyword search reads
    it (`query`, in `language` when given) and its configurations (`query_configs`)."""
    if query is None:
        return {"query": None, QUERY_CONFIGS: None}
    read = keyword_query(query, language)
    return {"query": read.text, QUERY_CONFIGS: list(read.configs)}


def _readings(text: ColumnElement[Any], bound: ColumnElement[Any], name: str) -> Readings:
    """The query's readings: (a table of its configurations, each configuration, the text it
    reads). The first configuration, the query's language's, reads the whole query; the
    others read only the words it keeps, so that its stop words ("de", "die", "the") do not
    match, read word for word, the texts that keep them (those of a language without stop
    words, or whose language was mistaken)."""
    config = (
        func.unnest(bound)
        .table_valued("config", with_ordinality="position")
        .render_derived(name=name)
    )
    debug = (
        func.ts_debug(cast(Grouping(bound)[1], REGCONFIG), text)
        .table_valued("alias", "description", "token", "dictionaries", "dictionary", "lexemes")
        .render_derived(name=f"{name}_words")
    )
    kept = (
        select(func.string_agg(debug.c.token, " "))
        .where(func.cardinality(debug.c.lexemes) > 0)
        .scalar_subquery()
    )
    read = case((config.c.position == 1, text), else_=func.coalesce(kept, ""))
    return config, config.c.config, read


def or_tsquery(
    query: str | ColumnElement[str],
    configs: Sequence[str] | None = None,
    *,
    language: str | None = None,
) -> ColumnElement[Any]:
    """The query's lexemes in each of its readings (`_readings`), OR-ed together. The
    statement's bound query (`query`, `query_configs`) is read once per statement, however
    many legs and tables ask (`_bound_query_read`).

    plainto_tsquery parses any text safely (no operator syntax is interpreted) but ANDs its
    lexemes, so a natural-language question matches almost nothing. Its output joins quoted
    lexemes with ' & '; a lexeme never holds a space, so replacing ' & ' by ' | ' turns the
    operators, and only them, into ORs. The text form of a tsquery is valid tsquery input.
    """
    if _is_bound_query(query, configs, language):
        return select(_bound_query_read().c.tsquery).scalar_subquery()
    return _or_tsquery(_readings(*_configs(query, configs, language), "query_config"))


def _or_tsquery(readings: Readings) -> ColumnElement[Any]:
    table, config, read = readings
    plain = func.plainto_tsquery(cast(config, REGCONFIG), read)
    ored = (
        select(func.string_agg(func.replace(cast(plain, Text), " & ", " | "), " | "))
        .select_from(table)
        .where(func.numnode(plain) > 0)
        .scalar_subquery()
    )
    return cast(func.coalesce(ored, ""), TSQUERY)


def query_lexemes(
    query: str | ColumnElement[str], configs: Sequence[str] | None = None
) -> ColumnElement[Any]:
    """The distinct lexemes of the query in each of its readings (`_readings`) (text[]), as
    documents are tokenised; the statement's bound query's are read once per statement."""
    if _is_bound_query(query, configs):
        # Cast, so that `= ANY (...)` reads an array, not the rows of a subquery.
        return cast(select(_bound_query_read().c.lexemes).scalar_subquery(), ARRAY(Text))
    return _lexemes(_readings(*_configs(query, configs), "lexeme_config"))


def _lexemes(readings: Readings) -> ColumnElement[Any]:
    table, config, read = readings
    lexeme = (
        func.unnest(func.tsvector_to_array(to_tsvector(read, config)))
        .table_valued("lexeme")
        .render_derived(name="query_lexeme")
    )
    return cast(
        select(func.array_agg(lexeme.c.lexeme.distinct()))
        .select_from(table)
        .join(lexeme, true())
        .scalar_subquery(),
        ARRAY(Text),
    )


def _is_bound_query(
    query: str | ColumnElement[str], configs: Sequence[str] | None, language: str | None = None
) -> bool:
    """Whether `query` is the statement's bound query, read with its bound configurations."""
    return (
        isinstance(query, BindParameter)
        and query.key == "query"
        and configs is None
        and language is None
    )


@functools.cache
def _bound_query_read() -> CTE:
    """The bound query's OR-ed tsquery and lexemes, computed once in the statement that
    reads them, from its readings computed once (ts_debug costs a few tenths of a ms)."""
    table, config, read = _readings(*_configs(bindparam("query", type_=Text), None), "query_config")
    readings = (
        select(config.label("config"), read.label("read"))
        .select_from(table)
        .cte("query_readings")
        .prefix_with("MATERIALIZED")
    )
    shared = (readings, readings.c.config, readings.c.read)
    return (
        select(_or_tsquery(shared).label("tsquery"), _lexemes(shared).label("lexemes"))
        .cte("query_read")
        .prefix_with("MATERIALIZED")
    )


def _term_statistics(
    prefix: str,
    tenant_id: ColumnElement[str],
    scopes: list[ColumnElement[str] | str] | None,
    query: ColumnElement[str],
) -> CTE:
    """A CTE of the query's lexemes found in the corpus: (term, idf, avgdl) from the tenant's
    statistics (`scopes` None) or those of `scopes`, summed."""
    if scopes is None:
        corpus = select(
            cast(KeywordCorpus.doc_count, Float).label("doc_count"),
            cast(KeywordCorpus.total_len, Float).label("total_len"),
        ).where(KeywordCorpus.tenant_id == tenant_id)
        found = select(KeywordTerm.term, KeywordTerm.doc_freq).where(
            KeywordTerm.tenant_id == tenant_id, KeywordTerm.term == any_(query_lexemes(query))
        )
    else:
        corpus_in_scopes, terms_in_scopes = (
            or_(*(table.scope == scope for scope in scopes))
            for table in (KeywordScopeCorpus, KeywordScopeTerm)
        )
        corpus = select(
            cast(func.sum(KeywordScopeCorpus.doc_count), Float).label("doc_count"),
            cast(func.sum(KeywordScopeCorpus.total_len), Float).label("total_len"),
        ).where(KeywordScopeCorpus.tenant_id == tenant_id, corpus_in_scopes)
        found = (
            select(KeywordScopeTerm.term, func.sum(KeywordScopeTerm.doc_freq).label("doc_freq"))
            .where(
                KeywordScopeTerm.tenant_id == tenant_id,
                terms_in_scopes,
                KeywordScopeTerm.term == any_(query_lexemes(query)),
            )
            .group_by(KeywordScopeTerm.term)
        )
    stats = corpus.cte(f"{prefix}_bm25_corpus")
    df = found.subquery(f"{prefix}_bm25_df")
    idf = func.ln(1 + (stats.c.doc_count - df.c.doc_freq + 0.5) / (df.c.doc_freq + 0.5))
    avgdl = stats.c.total_len / func.greatest(stats.c.doc_count, 1)
    return (
        select(df.c.term, idf.label("idf"), avgdl.label("avgdl"))
        .select_from(df)
        .join(stats, true())
        .cte(f"{prefix}_bm25_terms")
        .prefix_with("MATERIALIZED")
    )


def bm25_leg(
    memory_type: str,
    *,
    tenant_id: ColumnElement[str],
    scope: ColumnElement[str] | None,
    scope_is_global: bool,
    visibility: list[ColumnElement[bool]],
    query: ColumnElement[str],
    limit: ColumnElement[int],
    postings_per_term: int = POSTINGS_PER_TERM,
    postings_scanned: int = POSTINGS_SCANNED_PER_TERM,
    prefix: str | None = None,
    admitted: FromClause | None = None,
    neighbours: FromClause | None = None,
) -> Select[Any]:
    """The best `limit` visible memories of one type by BM25: (memory_type, id, score).

    `score` is minus the BM25 score, so that ascending order is best first like the semantic
    leg's distance. `visibility` are the memory table's filters (tenant, scope, lifecycle);
    `scope` picks the postings index partition: the scope itself, and for facts and rules
    also 'global' (unless the scope is 'global' itself). Values are SQL expressions (bound
    parameters), so the statement can be reused. `prefix` (default: the type) names its CTEs,
    which must differ between two legs of one statement. With `admitted` (a filter admits
    few memories: (memory_id, words), words being the tsvector of those holding a query
    lexeme) every one of them is scored exactly, instead of walking each lexeme's postings
    past the memories the filter refuses. Else the `neighbours` (`id`: the semantic leg's
    memories of this type, visible by the same filters) are scored with the walk's.
    """
    prefix = prefix or memory_type
    scopes: list[ColumnElement[str] | str] | None = None
    if scope is not None:
        scopes = [scope] if memory_type == "episode" or scope_is_global else [scope, "global"]
    terms = _term_statistics(prefix, tenant_id, scopes, query)
    if admitted is not None:
        return _admitted_scored(memory_type, prefix, terms, admitted, limit)
    found = _top_postings(
        memory_type,
        prefix,
        terms,
        [None] if scopes is None else [*scopes],
        tenant_id=tenant_id,
        visibility=visibility,
        postings_per_term=postings_per_term,
        postings_scanned=postings_scanned,
    )
    partial = func.sum(found.c.weight)
    walked: Select[Any] | CompoundSelect[Any] = (
        select(found.c.memory_id)
        .group_by(found.c.memory_id)
        .order_by(partial.desc(), found.c.memory_id)
        .limit(limit * RESCORED_PER_LIMIT)
    )
    if neighbours is not None:
        walked = union(
            select(walked.subquery(f"{prefix}_walked").c.memory_id),
            select(neighbours.c.id.label("memory_id")),
        )
    # Materialised, so the planner cannot re-run it once per query lexeme.
    pool = walked.cte(f"{prefix}_bm25_pool").prefix_with("MATERIALIZED")
    return _scored(memory_type, prefix, terms, pool, limit, tenant_id)


def _top_postings(
    memory_type: str,
    prefix: str,
    terms: CTE,
    partitions: list[ColumnElement[str] | str | None],
    *,
    tenant_id: ColumnElement[str],
    visibility: list[ColumnElement[bool]],
    postings_per_term: int,
    postings_scanned: int,
) -> FromClause:
    """Each query lexeme's `postings_per_term` postings of highest impact in each partition
    (None: the whole index) whose memories are visible, with their weight in the score:
    (memory_id, term, weight)."""
    model = MODELS[memory_type]
    tops = []
    for number, partition in enumerate(partitions):
        posting = KeywordPosting.__table__.alias(f"{prefix}_posting_{number}")
        clauses = [
            posting.c.tenant_id == tenant_id,
            posting.c.memory_type == memory_type,
            posting.c.term == terms.c.term,
        ]
        if partition is not None:
            clauses.append(posting.c.scope == partition)
        # Read the lexeme's postings of highest impact first, at most `postings_scanned`,
        # so that a filter refusing most memories bounds the walk instead of lengthening it.
        scanned = (
            select(posting.c.memory_id, posting.c.tf, posting.c.doc_len, posting.c.impact)
            .where(*clauses)
            .order_by(posting.c.impact.desc())
            .limit(postings_scanned)
            .correlate(terms)
            .lateral(f"{prefix}_scanned_{number}")
        )
        top = (
            select(scanned.c.memory_id, scanned.c.tf, scanned.c.doc_len)
            .join(model.__table__, model.id == scanned.c.memory_id)
            .where(*visibility)
            .order_by(scanned.c.impact.desc())
            .limit(postings_per_term)
            .lateral(f"{prefix}_top_{number}")
        )
        tops.append(
            select(
                top.c.memory_id,
                terms.c.term,
                (terms.c.idf * func.engram_bm25_tf(top.c.tf, top.c.doc_len, terms.c.avgdl)).label(
                    "weight"
                ),
            )
            .select_from(terms)
            .join(top, true())
        )
    return (union_all(*tops) if len(tops) > 1 else tops[0]).subquery(f"{prefix}_found")


def _admitted_scored(
    memory_type: str, prefix: str, terms: CTE, admitted: FromClause, limit: ColumnElement[int]
) -> Select[Any]:
    """The best `limit` of the `admitted` memories (memory_id, words: their tsvector when it
    holds a query lexeme), each scored exactly from its tsvector (the counts and length its
    postings were made from)."""
    words = admitted.c.words
    lexeme = (
        func.unnest(words)
        .table_valued("lexeme", "positions", "weights")
        .render_derived(name=f"{prefix}_lexeme")
    )
    tf = func.coalesce(func.array_length(lexeme.c.positions, 1), 1)
    # The document's length is the sum of its lexemes' counts, as engram_tsvector_length
    # reckons it, summed here over the lexemes the score already reads.
    counted = (
        select(lexeme.c.lexeme, tf.label("tf"), cast(func.sum(tf).over(), Integer).label("doc_len"))
        .select_from(lexeme)
        .subquery(f"{prefix}_counted")
    )
    # Lateral, so each memory is scored once: as a scalar subquery its score was computed
    # again for the filter, the order and the output.
    score = (
        select(
            func.sum(
                terms.c.idf * func.engram_bm25_tf(counted.c.tf, counted.c.doc_len, terms.c.avgdl)
            ).label("score")
        )
        .select_from(counted)
        .join(terms, terms.c.term == counted.c.lexeme)
        .lateral(f"{prefix}_admitted_score")
    )
    return (
        select(
            literal(memory_type, Text).label("memory_type"),
            admitted.c.memory_id.label("id"),
            (-score.c.score).label("score"),
        )
        .select_from(admitted)
        .join(score, true())
        .where(words.is_not(None), score.c.score.is_not(None))
        .order_by(score.c.score.desc(), admitted.c.memory_id)
        .limit(limit)
    )


def _scored(
    memory_type: str,
    prefix: str,
    terms: CTE,
    pool: CTE,
    limit: ColumnElement[int],
    tenant_id: ColumnElement[str],
) -> Select[Any]:
    """The best `limit` memories of `pool` by their exact BM25 score over the query's lexemes."""
    posting = KeywordPosting.__table__.alias(f"{prefix}_posting")
    # Lateral, so each pooled memory probes the primary key once per query lexeme whatever
    # the statistics say: as a plain join, stale statistics (a type's postings written
    # after the last ANALYZE) once made the planner read every posting of the type.
    exact = (
        select(
            func.sum(
                terms.c.idf * func.engram_bm25_tf(posting.c.tf, posting.c.doc_len, terms.c.avgdl)
            ).label("score")
        )
        .select_from(terms)
        .join(
            posting,
            and_(
                posting.c.memory_type == memory_type,
                posting.c.memory_id == pool.c.memory_id,
                posting.c.term == terms.c.term,
                posting.c.tenant_id == tenant_id,
            ),
        )
        .lateral(f"{prefix}_bm25_exact")
    )
    return (
        select(
            literal(memory_type, Text).label("memory_type"),
            pool.c.memory_id.label("id"),
            (-exact.c.score).label("score"),
        )
        .select_from(pool)
        .join(exact, true())
        .where(exact.c.score.is_not(None))
        .order_by(exact.c.score.desc(), pool.c.memory_id)
        .limit(limit)
    )
