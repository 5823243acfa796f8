"""mem_010 keyword postings: a BM25 index in plain SQL, kept by triggers.

Neither the embedded server (PostgreSQL 18 + pgvector) nor the compose image ships a BM25
extension, so the index is three tables:

* `keyword_postings`: one row per (memory, lexeme) of its `search_vector`, with the term
  frequency `tf` (the lexeme's position count), the document length `doc_len` (the sum of
  them) and `impact`, the BM25 term-frequency part `engram_bm25_tf(tf, doc_len, avgdl)` at
  the tenant's average length when the row was written. A query takes, for each of its
  lexemes, only the top postings by `impact` from the btrees on
  (tenant_id, memory_type, [scope,] term, impact DESC), then scores those candidates exactly
  with today's idf and avgdl. Common lexemes never have all their postings read.
* `keyword_terms`: the tenant's document frequency of each lexeme (for idf).
* `keyword_corpus`: the tenant's document count and total length (for idf and avgdl).

Statement-level AFTER INSERT / AFTER DELETE triggers (transition tables, one pass per
statement, so a batch of 500 episodes is one upsert of its terms) and a row-level AFTER
UPDATE trigger that fires only when `search_vector`, the scope or the tenant really changed
(rule inversion rewrites content; reference bumps and re-embeds do not touch these columns)
keep the three tables right in the writer's own transaction, whichever code path writes.
Every trigger writes the tenant's `keyword_corpus` row first: that row lock serialises the
keyword-index writers of one tenant until they commit, so two writers never wait on each
other's term rows (terms belong to one tenant) and cannot deadlock on them. Documents with an empty tsvector are not counted.

tf comes from the positions PostgreSQL keeps: at most 256 per lexeme, and positions beyond
16,383 collapse into one, so very long texts under-count tf (BM25 saturates long before).

Revision ID: mem_010
Revises: mem_009
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_010"
down_revision: str | None = "mem_009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> (memory_type, the column that is its search scope)
MEMORY_TABLES = {"episodes": ("episode", "butler"), "facts": ("fact", "scope"),
                 "rules": ("rule", "scope")}

# BM25 constants: k1 (term-frequency saturation) and b (length normalisation).
K1 = 1.2
B = 0.75


def _add_documents(memory_type: str, source: str) -> str:
    """SQL adding the documents of `source` (tenant_id, id, scope, search_vector) to the index.

    The corpus rows first (tenant order), then the terms (sorted), then the postings, whose
    impact uses the average length including the new documents.
    """
    return f"""
        INSERT INTO keyword_corpus AS c (tenant_id, doc_count, total_len)
        SELECT tenant_id, count(*), sum(engram_tsvector_length(search_vector))
        FROM {source} AS src WHERE length(search_vector) > 0
        GROUP BY tenant_id ORDER BY tenant_id
        ON CONFLICT (tenant_id) DO UPDATE
            SET doc_count = c.doc_count + excluded.doc_count,
                total_len = c.total_len + excluded.total_len;
        INSERT INTO keyword_terms AS t (tenant_id, term, doc_freq)
        SELECT src.tenant_id, lexeme, count(*)
        FROM {source} AS src, unnest(src.search_vector) AS lex
        GROUP BY src.tenant_id, lexeme ORDER BY src.tenant_id, lexeme
        ON CONFLICT (tenant_id, term) DO UPDATE SET doc_freq = t.doc_freq + excluded.doc_freq;
        INSERT INTO keyword_postings
            (tenant_id, memory_type, scope, term, memory_id, tf, doc_len, impact)
        SELECT src.tenant_id, '{memory_type}', src.scope, lex.lexeme, src.id,
               coalesce(array_length(lex.positions, 1), 1), d.doc_len,
               engram_bm25_tf(coalesce(array_length(lex.positions, 1), 1), d.doc_len,
                              c.total_len::float8 / greatest(c.doc_count, 1))
        FROM {source} AS src
        JOIN keyword_corpus AS c ON c.tenant_id = src.tenant_id
        CROSS JOIN LATERAL (SELECT engram_tsvector_length(src.search_vector) AS doc_len) AS d
        CROSS JOIN LATERAL unnest(src.search_vector) AS lex;
    """


def _remove_documents(memory_type: str, source: str) -> str:
    """SQL removing the documents of `source` from the index (same lock order as adding)."""
    return f"""
        UPDATE keyword_corpus AS c
        SET doc_count = c.doc_count - gone.doc_count, total_len = c.total_len - gone.total_len
        FROM (SELECT tenant_id, count(*) AS doc_count,
                     sum(engram_tsvector_length(search_vector)) AS total_len
              FROM {source} AS src WHERE length(search_vector) > 0
              GROUP BY tenant_id) AS gone
        WHERE c.tenant_id = gone.tenant_id;
        UPDATE keyword_terms AS t SET doc_freq = t.doc_freq - gone.doc_freq
        FROM (SELECT src.tenant_id, lexeme AS term, count(*) AS doc_freq
              FROM {source} AS src, unnest(src.search_vector) AS lex
              GROUP BY src.tenant_id, lexeme) AS gone
        WHERE t.tenant_id = gone.tenant_id AND t.term = gone.term;
        DELETE FROM keyword_terms AS t
        USING (SELECT DISTINCT src.tenant_id, lexeme AS term
               FROM {source} AS src, unnest(src.search_vector) AS lex) AS gone
        WHERE t.tenant_id = gone.tenant_id AND t.term = gone.term AND t.doc_freq <= 0;
        DELETE FROM keyword_postings AS p USING {source} AS src
        WHERE p.memory_type = '{memory_type}' AND p.memory_id = src.id;
    """


def upgrade() -> None:
    op.execute("""
        CREATE FUNCTION engram_tsvector_length(vector tsvector) RETURNS integer
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer
            FROM unnest(vector)
        $$
    """)
    op.execute(f"""
        CREATE FUNCTION engram_bm25_tf(tf integer, doc_len integer, avgdl float8)
        RETURNS float8
        -- Not STRICT: greatest() is not strict, and a STRICT SQL function whose body is
        -- not strict cannot be inlined into the query that calls it.
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT tf * ({K1}::float8 + 1)
                / (tf + {K1}::float8 * (1 - {B}::float8 + {B}::float8 * doc_len
                                        / greatest(avgdl, 1::float8)))
        $$
    """)
    op.execute("""
        CREATE TABLE keyword_corpus (
            tenant_id text PRIMARY KEY,
            doc_count bigint NOT NULL,
            total_len bigint NOT NULL
        )
    """)
    op.execute("""
        CREATE TABLE keyword_terms (
            tenant_id text NOT NULL,
            term text NOT NULL,
            doc_freq integer NOT NULL,
            CONSTRAINT pk_keyword_terms PRIMARY KEY (tenant_id, term)
        )
    """)
    op.execute("""
        CREATE TABLE keyword_postings (
            tenant_id text NOT NULL,
            memory_type text NOT NULL,
            scope text NOT NULL,
            term text NOT NULL,
            memory_id uuid NOT NULL,
            tf integer NOT NULL,
            doc_len integer NOT NULL,
            impact real NOT NULL,
            CONSTRAINT pk_keyword_postings PRIMARY KEY (memory_type, memory_id, term)
        )
    """)

    for table, (memory_type, scope_column) in MEMORY_TABLES.items():
        rows = (f"(SELECT tenant_id, id, {scope_column} AS scope, search_vector FROM {table} "
                "WHERE search_vector IS NOT NULL)")
        op.execute(f"DO $$ BEGIN {_add_documents(memory_type, rows)} END $$")
    # Built after the backfill: faster than maintaining them row by row.
    op.execute("CREATE INDEX ix_keyword_postings_top ON keyword_postings "
               "(tenant_id, memory_type, term, impact DESC)")
    op.execute("CREATE INDEX ix_keyword_postings_scope_top ON keyword_postings "
               "(tenant_id, memory_type, scope, term, impact DESC)")

    for table, (memory_type, scope_column) in MEMORY_TABLES.items():
        new_rows = (f"(SELECT tenant_id, id, {scope_column} AS scope, search_vector "
                    "FROM new_rows WHERE search_vector IS NOT NULL)")
        old_rows = (f"(SELECT tenant_id, id, {scope_column} AS scope, search_vector "
                    "FROM old_rows WHERE search_vector IS NOT NULL)")
        op.execute(f"""
            CREATE FUNCTION engram_keyword_{table}_insert() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN {_add_documents(memory_type, new_rows)} RETURN NULL; END $$
        """)
        op.execute(f"""
            CREATE FUNCTION engram_keyword_{table}_delete() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN {_remove_documents(memory_type, old_rows)} RETURN NULL; END $$
        """)
        old_row = (f"(SELECT OLD.tenant_id, OLD.id, OLD.{scope_column} AS scope, "
                   "OLD.search_vector WHERE OLD.search_vector IS NOT NULL)")
        new_row = (f"(SELECT NEW.tenant_id, NEW.id, NEW.{scope_column} AS scope, "
                   "NEW.search_vector WHERE NEW.search_vector IS NOT NULL)")
        op.execute(f"""
            CREATE FUNCTION engram_keyword_{table}_update() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                {_remove_documents(memory_type, old_row)}
                {_add_documents(memory_type, new_row)}
                RETURN NULL;
            END $$
        """)
        op.execute(f"CREATE TRIGGER trg_{table}_keyword_insert AFTER INSERT ON {table} "
                   "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION engram_keyword_{table}_insert()")
        op.execute(f"CREATE TRIGGER trg_{table}_keyword_delete AFTER DELETE ON {table} "
                   "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
                   f"EXECUTE FUNCTION engram_keyword_{table}_delete()")
        op.execute(f"CREATE TRIGGER trg_{table}_keyword_update "
                   f"AFTER UPDATE OF search_vector, {scope_column}, tenant_id ON {table} "
                   "FOR EACH ROW WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector "
                   f"OR OLD.{scope_column} IS DISTINCT FROM NEW.{scope_column} "
                   "OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id) "
                   f"EXECUTE FUNCTION engram_keyword_{table}_update()")


def downgrade() -> None:
    for table in MEMORY_TABLES:
        for event in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_keyword_{event} ON {table}")
            op.execute(f"DROP FUNCTION IF EXISTS engram_keyword_{table}_{event}()")
    op.execute("DROP TABLE IF EXISTS keyword_postings")
    op.execute("DROP TABLE IF EXISTS keyword_terms")
    op.execute("DROP TABLE IF EXISTS keyword_corpus")
    op.execute("DROP FUNCTION IF EXISTS engram_bm25_tf(integer, integer, float8)")
    op.execute("DROP FUNCTION IF EXISTS engram_tsvector_length(tsvector)")
