"""mem_030 keyword counts last: a batch of episodes counts its words at the end of its transaction.

The keyword triggers (mem_010, mem_021) update the tenant's `keyword_corpus` row when the
episodes are inserted, and that row lock serialises the tenant's keyword writers until they
commit. A batch of 250 episodes goes on to insert its passages (hundreds of vectors into
an HNSW index) and its events, so a single fact or episode write of the same tenant waited
for all of that (up to 7 s on 2 busy cores).

With the transaction setting `engram.keyword_counts_later` on, the episodes' insert trigger
writes only the postings (their impact from the tenant's numbers without the batch; impact
only picks which postings a query reads, candidates are scored exactly), and
`engram_keyword_count_episodes(ids)`, called as the transaction's last statement, adds the
batch to the tenant's and the scopes' document counts, lengths and term frequencies, in the
same lock order as the triggers. Other writers see the batch's rows and its counts together,
at its commit.

Revision ID: mem_030
Revises: mem_026
Create Date: 2026-11-26
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "mem_030"
down_revision: str | None = "mem_026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

NEW_ROWS = ("(SELECT tenant_id, id, butler AS scope, search_vector FROM new_rows "
            "WHERE search_vector IS NOT NULL)")
COUNTED = ("(SELECT tenant_id, id, butler AS scope, search_vector FROM episodes "
           "WHERE id = ANY(ids) AND search_vector IS NOT NULL)")


def _revision(name: str) -> ModuleType:
    """An earlier revision module, whose SQL builders this one reuses."""
    [path] = Path(__file__).parent.glob(f"*_{name}_*.py")
    spec = importlib.util.spec_from_file_location(f"engram_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _postings(source: str) -> str:
    """SQL adding the postings of `source`'s episodes, the tenant's counts left as they are."""
    return f"""
        INSERT INTO keyword_postings
            (tenant_id, memory_type, scope, term, memory_id, tf, doc_len, impact)
        SELECT src.tenant_id, 'episode', src.scope, lex.lexeme, src.id,
               coalesce(array_length(lex.positions, 1), 1), d.doc_len,
               engram_bm25_tf(coalesce(array_length(lex.positions, 1), 1), d.doc_len,
                              coalesce(c.total_len::float8 / nullif(c.doc_count, 0),
                                       d.doc_len))
        FROM {source} AS src
        LEFT JOIN keyword_corpus AS c ON c.tenant_id = src.tenant_id
        CROSS JOIN LATERAL (SELECT engram_tsvector_length(src.search_vector) AS doc_len) AS d
        CROSS JOIN LATERAL unnest(src.search_vector) AS lex;
    """


def _counts(source: str) -> str:
    """SQL adding `source`'s documents to the tenant's counts, then to its scopes'."""
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
    """ + _revision("mem_021")._add_to_scopes(source)


def _insert_trigger(body: str) -> None:
    op.execute(f"""
        CREATE OR REPLACE FUNCTION engram_keyword_episodes_insert() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN {body} RETURN NULL; END $$
    """)


def _immediate_body() -> str:
    """The mem_021 body: postings and every count, at once."""
    return (_revision("mem_010")._add_documents("episode", NEW_ROWS)
            + _revision("mem_021")._add_to_scopes(NEW_ROWS))


def upgrade() -> None:
    _insert_trigger(f"""
        IF current_setting('engram.keyword_counts_later', true) = 'on' THEN
            {_postings(NEW_ROWS)}
        ELSE
            {_immediate_body()}
        END IF;
    """)
    op.execute(f"""
        CREATE FUNCTION engram_keyword_count_episodes(ids uuid[]) RETURNS void
        LANGUAGE plpgsql AS $$ BEGIN {_counts(COUNTED)} END $$
    """)


def downgrade() -> None:
    op.execute("DROP FUNCTION engram_keyword_count_episodes(uuid[])")
    _insert_trigger(_immediate_body())
