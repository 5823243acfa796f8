"""mem_040 keyword length once: a document's length is reckoned once, not once per lexeme.

The keyword triggers (mem_010, mem_021, mem_030) wrote each posting's `doc_len` from
`CROSS JOIN LATERAL (SELECT engram_tsvector_length(src.search_vector))`. The planner pulls
that subquery up into the statement, so the length, itself a pass over every lexeme, was
computed again for every lexeme of the document: quadratic in its distinct lexemes. English
prose has a few hundred; text written without spaces is cut into character pairs, about one
new lexeme per character, and one 10,000-character Chinese episode took a minute to store.
The postings are now written from a MATERIALIZED set of the documents with their lengths.

`engram_first_lexemes(vector, cap)` keeps a tsvector's `cap` lexemes that occur first in
the text (app/core/languages.py `MAX_DOCUMENT_LEXEMES`): what the application stores, so the
postings, the counts and the text match of one document are bounded together.

Revision ID: mem_040
Revises: mem_039
Create Date: 2026-11-29
"""

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "mem_040"
down_revision: str | None = "mem_039"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

POSTINGS = "INSERT INTO keyword_postings"
# Each document with its length, computed once: the CTE is never folded into the statement.
DOCUMENTS = """
    WITH docs AS MATERIALIZED (
        SELECT src.tenant_id, src.id, src.scope, src.search_vector,
               engram_tsvector_length(src.search_vector) AS doc_len
        FROM {source} AS src)
"""


def _revision(name: str) -> ModuleType:
    """An earlier revision module, whose SQL builders this one reuses."""
    [path] = Path(__file__).parent.glob(f"*_{name}_*.py")
    spec = importlib.util.spec_from_file_location(f"engram_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _postings(memory_type: str, source: str, corpus_join: str, avgdl: str) -> str:
    """SQL adding the postings of `source`'s documents, each document's length once."""
    return DOCUMENTS.format(source=source) + f"""
        {POSTINGS}
            (tenant_id, memory_type, scope, term, memory_id, tf, doc_len, impact)
        SELECT docs.tenant_id, '{memory_type}', docs.scope, lex.lexeme, docs.id,
               coalesce(array_length(lex.positions, 1), 1), docs.doc_len,
               engram_bm25_tf(coalesce(array_length(lex.positions, 1), 1), docs.doc_len,
                              {avgdl})
        FROM docs
        {corpus_join} keyword_corpus AS c ON c.tenant_id = docs.tenant_id
        CROSS JOIN LATERAL unnest(docs.search_vector) AS lex;
    """


def _counted_first(memory_type: str, source: str) -> str:
    """mem_010's `_add_documents` (counts, then postings at the new average length)."""
    counts = _revision("mem_010")._add_documents(memory_type, source).split(POSTINGS)[0]
    return counts + _postings(memory_type, source, "JOIN",
                              "c.total_len::float8 / greatest(c.doc_count, 1)")


def _postings_only(source: str) -> str:
    """mem_030's `_postings` (the tenant's counts left for the end of the transaction)."""
    return _postings("episode", source, "LEFT JOIN",
                     "coalesce(c.total_len::float8 / nullif(c.doc_count, 0), docs.doc_len)")


Builder = Callable[[str, str], str]


def _replace(add: Builder, postings_only: Callable[[str], str]) -> None:
    """Every keyword trigger function that adds documents, with `add`'s postings."""
    mem_021 = _revision("mem_021")
    mem_010 = _revision("mem_010")
    mem_021._replace_trigger_functions(
        lambda memory_type, source: add(memory_type, source) + mem_021._add_to_scopes(source),
        lambda memory_type, source: (mem_010._remove_documents(memory_type, source)
                                     + mem_021._remove_from_scopes(source)))
    new_rows = _revision("mem_030").NEW_ROWS
    op.execute(f"""
        CREATE OR REPLACE FUNCTION engram_keyword_episodes_insert() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN
            IF current_setting('engram.keyword_counts_later', true) = 'on' THEN
                {postings_only(new_rows)}
            ELSE
                {add("episode", new_rows)}
                {mem_021._add_to_scopes(new_rows)}
            END IF;
            RETURN NULL;
        END $$
    """)


def upgrade() -> None:
    _replace(_counted_first, _postings_only)
    op.execute("""
        CREATE FUNCTION engram_first_lexemes(vector tsvector, cap integer) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT CASE WHEN length(vector) <= cap THEN vector
                   ELSE ts_delete(vector, ARRAY(
                       SELECT lexeme FROM unnest(vector)
                       ORDER BY positions[1] NULLS LAST, lexeme OFFSET greatest(cap, 0)))
                   END
        $$
    """)


def downgrade() -> None:
    op.execute("DROP FUNCTION engram_first_lexemes(tsvector, integer)")
    mem_010 = _revision("mem_010")
    _replace(mem_010._add_documents, _revision("mem_030")._postings)
