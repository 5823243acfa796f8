"""mem_036 search configs: each searchable row keeps the text search configuration its
tsvector was built with (`english`, `german`, `simple`, ...), as its language was told.

Rows stored before keep `english`, which they were built with; `engram reindex-text` reads
them again in their own language.

Revision ID: mem_036
Revises: mem_035
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_036"
down_revision: str | None = "mem_035"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("episodes", "facts", "rules", "agent_events", "procedures", "runs", "run_messages",
          "arcs")


def upgrade() -> None:
    # A constant default: PostgreSQL adds the column without rewriting the table.
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ADD COLUMN search_config regconfig NOT NULL "
                   "DEFAULT 'english'")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} DROP COLUMN search_config")
