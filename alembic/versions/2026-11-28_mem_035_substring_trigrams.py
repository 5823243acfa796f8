"""mem_035 substring trigrams: entity name lookups use an index under row-level security
without marking `textlike` LEAKPROOF.

`textlike` (LIKE) is not leakproof: `LIKE '%zorro\\'` raises "LIKE pattern must not end with
escape character" only on a row whose text reaches that escape, so, evaluated before the
row-level security filter, it told one tenant's query whether another tenant's row contains
a text. Its mark (mem_012) is removed. The substring lookups keep an index by a condition
that cannot raise: `engram_trigrams(text)` is every run of three characters of a text, a GIN
index holds it for entity names and aliases, and `engram_trigrams(name) @> engram_trigrams(x)`
(array containment, leakproof) holds for every name that contains `x`; LIKE then checks the
few rows found, after the row-level security filter. Marks need a superuser; without one the
lookups read every entity of the tenant (a NOTICE says so).

Revision ID: mem_035
Revises: mem_034
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

from app.postgres.migrations import create_index_concurrently

revision: str = "mem_035"
down_revision: str | None = "mem_034"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TRIGRAMS = "engram_trigrams(text)"
TEXTLIKE = "pg_catalog.textlike(text, text)"


def _mark(leakproof: str, textlike: str) -> None:
    op.execute(f"""
        DO $$
        BEGIN
        IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            EXECUTE 'ALTER FUNCTION {TRIGRAMS} {leakproof}';
            EXECUTE 'ALTER FUNCTION {TEXTLIKE} {textlike}';
        ELSE
            RAISE NOTICE 'not a superuser: {TRIGRAMS} is not marked LEAKPROOF, so entity '
                         'name and alias substring lookups under row-level security read '
                         'every entity of the tenant (docs/operations.md)';
        END IF;
        END $$
    """)


def upgrade() -> None:
    op.execute(f"""
        CREATE OR REPLACE FUNCTION {TRIGRAMS} RETURNS text[]
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
            SELECT coalesce(array_agg(DISTINCT substr($1, i, 3)), '{{}}')
            FROM generate_series(1, length($1) - 2) AS i
        $$
    """)
    create_index_concurrently("ix_entities_name_trigrams",
                              "ON entities USING gin (engram_trigrams(lower(canonical_name)))")
    create_index_concurrently("ix_entities_alias_trigrams",
                              "ON entities USING gin (engram_trigrams(alias_search))")
    _mark("LEAKPROOF", "NOT LEAKPROOF")


def downgrade() -> None:
    _mark("NOT LEAKPROOF", "LEAKPROOF")
    op.execute("DROP INDEX IF EXISTS ix_entities_alias_trigrams")
    op.execute("DROP INDEX IF EXISTS ix_entities_name_trigrams")
    op.execute(f"DROP FUNCTION IF EXISTS {TRIGRAMS}")
