"""mem_037 unembedded memories: partial indexes of the episodes, facts and rules stored
without a vector, which the embedding backlog reads and counts.

With a remote embedding model, a write whose model call fails or is slow stores its
memories without vectors; the backlog embeds them later. These indexes hold only those rows,
so finding and counting them costs nothing when there are none.

Revision ID: mem_037
Revises: mem_036
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

from app.postgres.migrations import create_index_concurrently

revision: str = "mem_037"
down_revision: str | None = "mem_036"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("episodes", "facts", "rules")


def upgrade() -> None:
    for table in TABLES:
        create_index_concurrently(f"ix_{table}_unembedded",
                                  f"ON {table} (id) WHERE embedding IS NULL")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP INDEX IF EXISTS ix_{table}_unembedded")
