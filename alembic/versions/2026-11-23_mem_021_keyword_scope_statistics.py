"""mem_021 keyword statistics per scope: a scoped search's BM25 reads its own scope's numbers.

mem_010 keeps the tenant's document count, total length and document frequencies. A search
within one scope (a butler's episodes; a scope's facts and rules with the global ones) then
weighs its words by what every other scope of the tenant holds: thousands of unrelated
short notes in other butlers lowered LoCoMo keyword R@10 from 0.610 to 0.511 (bench/journal/2026-11.md).
Two tables now keep the same numbers per (tenant, scope) beside the tenant's:

* `keyword_scope_corpus`: (tenant_id, scope) -> doc_count, total_len;
* `keyword_scope_terms`: (tenant_id, scope, term) -> doc_freq.

A scope's rows go when its last document does, so an erased butler leaves no row naming it.

The mem_010 trigger functions are replaced by versions that also write these. They still
write the tenant's `keyword_corpus` row first, so the tenant's keyword writers stay
serialised by that one row lock and cannot deadlock on scope rows either. Postings keep the
impact they were written with (at the tenant's average length); impact only picks which
postings a query reads, and candidates are then scored exactly with the searched scope's
statistics.

Revision ID: mem_021
Revises: mem_020
Create Date: 2026-11-23
"""

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls

revision: str = "mem_021"
down_revision: str | None = "mem_020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCOPE_TABLES = ("keyword_scope_corpus", "keyword_scope_terms")


def _mem_010() -> ModuleType:
    """Revision mem_010, whose trigger bodies this one extends (and restores on downgrade)."""
    path = Path(__file__).with_name("2026-11-22_mem_010_keyword_postings.py")
    spec = importlib.util.spec_from_file_location("engram_mem_010", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _add_to_scopes(source: str) -> str:
    """SQL adding the documents of `source` to their scopes' statistics."""
    return f"""
        INSERT INTO keyword_scope_corpus AS c (tenant_id, scope, doc_count, total_len)
        SELECT tenant_id, scope, count(*), sum(engram_tsvector_length(search_vector))
        FROM {source} AS src WHERE length(search_vector) > 0
        GROUP BY tenant_id, scope ORDER BY tenant_id, scope
        ON CONFLICT (tenant_id, scope) DO UPDATE
            SET doc_count = c.doc_count + excluded.doc_count,
                total_len = c.total_len + excluded.total_len;
        INSERT INTO keyword_scope_terms AS t (tenant_id, scope, term, doc_freq)
        SELECT src.tenant_id, src.scope, lexeme, count(*)
        FROM {source} AS src, unnest(src.search_vector) AS lex
        GROUP BY src.tenant_id, src.scope, lexeme ORDER BY src.tenant_id, src.scope, lexeme
        ON CONFLICT (tenant_id, scope, term) DO UPDATE
            SET doc_freq = t.doc_freq + excluded.doc_freq;
    """


def _remove_from_scopes(source: str) -> str:
    """SQL removing the documents of `source` from their scopes' statistics."""
    return f"""
        UPDATE keyword_scope_corpus AS c
        SET doc_count = c.doc_count - gone.doc_count, total_len = c.total_len - gone.total_len
        FROM (SELECT tenant_id, scope, count(*) AS doc_count,
                     sum(engram_tsvector_length(search_vector)) AS total_len
              FROM {source} AS src WHERE length(search_vector) > 0
              GROUP BY tenant_id, scope) AS gone
        WHERE c.tenant_id = gone.tenant_id AND c.scope = gone.scope;
        UPDATE keyword_scope_terms AS t SET doc_freq = t.doc_freq - gone.doc_freq
        FROM (SELECT src.tenant_id, src.scope, lexeme AS term, count(*) AS doc_freq
              FROM {source} AS src, unnest(src.search_vector) AS lex
              GROUP BY src.tenant_id, src.scope, lexeme) AS gone
        WHERE t.tenant_id = gone.tenant_id AND t.scope = gone.scope AND t.term = gone.term;
        DELETE FROM keyword_scope_terms AS t WHERE t.doc_freq <= 0
            AND (t.tenant_id, t.scope, t.term) IN (
                SELECT DISTINCT src.tenant_id, src.scope, lexeme
                FROM {source} AS src, unnest(src.search_vector) AS lex);
        DELETE FROM keyword_scope_corpus AS c WHERE c.doc_count <= 0
            AND (c.tenant_id, c.scope) IN (SELECT tenant_id, scope FROM {source} AS src);
    """


Builder = Callable[[str, str], str]


def _replace_trigger_functions(add: Builder, remove: Builder) -> None:
    """Give every memory table's keyword trigger functions the bodies `add` and `remove`
    build for (memory_type, source rows)."""
    for table, (memory_type, scope_column) in _mem_010().MEMORY_TABLES.items():
        def rows(relation: str) -> str:
            return (f"(SELECT tenant_id, id, {scope_column} AS scope, search_vector "
                    f"FROM {relation} WHERE search_vector IS NOT NULL)")

        def row(record: str) -> str:
            return (f"(SELECT {record}.tenant_id, {record}.id, {record}.{scope_column} AS scope, "
                    f"{record}.search_vector WHERE {record}.search_vector IS NOT NULL)")

        bodies = {
            "insert": add(memory_type, rows("new_rows")),
            "delete": remove(memory_type, rows("old_rows")),
            "update": remove(memory_type, row("OLD")) + add(memory_type, row("NEW")),
        }
        for event, body in bodies.items():
            op.execute(f"""
                CREATE OR REPLACE FUNCTION engram_keyword_{table}_{event}() RETURNS trigger
                LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$
            """)


def upgrade() -> None:
    op.execute("""
        CREATE TABLE keyword_scope_corpus (
            tenant_id text NOT NULL,
            scope text NOT NULL,
            doc_count bigint NOT NULL,
            total_len bigint NOT NULL,
            CONSTRAINT pk_keyword_scope_corpus PRIMARY KEY (tenant_id, scope)
        )
    """)
    op.execute("""
        CREATE TABLE keyword_scope_terms (
            tenant_id text NOT NULL,
            scope text NOT NULL,
            term text NOT NULL,
            doc_freq integer NOT NULL,
            CONSTRAINT pk_keyword_scope_terms PRIMARY KEY (tenant_id, scope, term)
        )
    """)
    for table in SCOPE_TABLES:
        enable_tenant_rls(op, table)
    op.execute("SELECT set_config('engram.system', 'on', true)")
    # Every indexed document has postings, each carrying its scope and length.
    op.execute("""
        INSERT INTO keyword_scope_corpus (tenant_id, scope, doc_count, total_len)
        SELECT tenant_id, scope, count(*), sum(doc_len)
        FROM (SELECT DISTINCT tenant_id, scope, memory_type, memory_id, doc_len
              FROM keyword_postings) AS documents
        GROUP BY tenant_id, scope
    """)
    op.execute("""
        INSERT INTO keyword_scope_terms (tenant_id, scope, term, doc_freq)
        SELECT tenant_id, scope, term, count(*) FROM keyword_postings
        GROUP BY tenant_id, scope, term
    """)
    mem_010 = _mem_010()
    _replace_trigger_functions(
        lambda memory_type, source: (mem_010._add_documents(memory_type, source)
                                     + _add_to_scopes(source)),
        lambda memory_type, source: (mem_010._remove_documents(memory_type, source)
                                     + _remove_from_scopes(source)))


def downgrade() -> None:
    mem_010 = _mem_010()
    _replace_trigger_functions(mem_010._add_documents, mem_010._remove_documents)
    for table in SCOPE_TABLES:
        disable_tenant_rls(op, table)
        op.execute(f"DROP TABLE {table}")
