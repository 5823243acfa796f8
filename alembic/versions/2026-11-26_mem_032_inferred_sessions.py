"""mem_032 inferred sessions: episodes stored without a session_id get one of Engram's making.

`episodes.inferred_session` holds the session the gap rule gives an episode stored without a
session_id (its butler's episodes in time order, a new session after a gap longer than
`episode_session_gap_minutes`); search groups turns by `coalesce(session_id, inferred)`.
The partial index answers the write-time lookup of the stored neighbours before and after
a new episode in one probe each.

Revision ID: mem_032
Revises: mem_028
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from app.postgres.migrations import create_index_concurrently
from sqlalchemy.dialects import postgresql

revision: str = "mem_032"
down_revision: str | None = "mem_028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # IF NOT EXISTS: an index build below that was interrupted leaves the column committed.
    op.execute("ALTER TABLE episodes ADD COLUMN IF NOT EXISTS inferred_session uuid")
    create_index_concurrently("ix_episodes_inferred_session_time",
                              "ON episodes (tenant_id, butler, occurred_at) "
                              "WHERE session_id IS NULL AND inferred_session IS NOT NULL")
    # The turns before or after one of an inferred session (context passages, deletion).
    create_index_concurrently("ix_episodes_inferred_session_turns",
                              "ON episodes (tenant_id, inferred_session, sequence) "
                              "WHERE inferred_session IS NOT NULL")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_episodes_inferred_session_turns")
    op.execute("DROP INDEX IF EXISTS ix_episodes_inferred_session_time")
    op.drop_column("episodes", "inferred_session")
