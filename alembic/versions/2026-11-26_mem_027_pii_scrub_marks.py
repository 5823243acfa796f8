"""mem_027 PII scrub marks: when the scrub last checked runs, feedback, rules and episodes.

The PII scrub rewrites run messages (marked since mem_014), and now also runs (summary and
meta), run feedback rationales, rules (run lessons among them) and episodes (content and
metadata). Each gets
`scrubbed_at`, set when the scrub checked the row, so a scheduled scrub reads only rows
stored since; a partial index on the rows not yet checked keeps that read small.

Revision ID: mem_027
Revises: mem_025
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

from app.postgres.migrations import create_index_concurrently

revision: str = "mem_027"
down_revision: str | None = "mem_025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("runs", "run_feedback", "rules", "episodes")


def upgrade() -> None:
    # IF NOT EXISTS: an index build below that was interrupted leaves the columns committed.
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS scrubbed_at timestamptz")
    for table in TABLES:
        create_index_concurrently(f"ix_{table}_not_scrubbed",
                                  f"ON {table} (id) WHERE scrubbed_at IS NULL")


def downgrade() -> None:
    for table in TABLES:
        op.drop_index(f"ix_{table}_not_scrubbed", table_name=table)
        op.drop_column(table, "scrubbed_at")
