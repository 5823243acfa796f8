"""mem_034 consolidation retry: when consolidation next tries an episode that failed.

`episodes.next_attempt_at` holds the time before which consolidation leaves a failed episode
alone (a backoff that grows with each failure, up to a cap); NULL means at once. Failed
episodes are no longer final: they are retried until consolidated. The partial index holds
every episode waiting for consolidation, pending or failed, for the job's pick-up and the
gauge of the backlog; it is built CONCURRENTLY, outside the revision's transaction, so the
upgrade does not block writes to a large episodes table.

Revision ID: mem_034
Revises: mem_033
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.postgres.migrations import create_index_concurrently

revision: str = "mem_034"
down_revision: str | None = "mem_033"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("episodes", sa.Column("next_attempt_at", sa.DateTime(timezone=True)))
    create_index_concurrently("ix_episodes_awaiting_consolidation",
                              "ON episodes (tenant_id, butler, created_at) WHERE NOT consolidated")


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.execute("DROP INDEX CONCURRENTLY IF EXISTS ix_episodes_awaiting_consolidation")
    op.drop_column("episodes", "next_attempt_at")
