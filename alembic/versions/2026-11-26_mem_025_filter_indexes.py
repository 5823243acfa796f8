"""mem_025 indexes for filters: GIN on metadata, on rules' tags.

A filter's `$eq` on a metadata path or on tags implies that the column contains a small JSON
document; `jsonb_path_ops` GIN indexes answer that containment, so a selective filter reads
only the rows it may admit.

Revision ID: mem_025
Revises: mem_024
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_025"
down_revision: str | None = "mem_024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

METADATA_TABLES = ("episodes", "facts", "rules")


def upgrade() -> None:
    for table in METADATA_TABLES:
        op.execute(f"CREATE INDEX ix_{table}_metadata ON {table} "
                   "USING gin (metadata jsonb_path_ops)")
    op.execute("CREATE INDEX ix_rules_tags ON rules USING gin (tags)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_rules_tags")
    for table in METADATA_TABLES:
        op.execute(f"DROP INDEX IF EXISTS ix_{table}_metadata")
