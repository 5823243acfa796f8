"""mem_008 episode time and order: occurred_at (when it happened) and sequence (storage order).

Revision ID: mem_008
Revises: mem_007
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "mem_008"
down_revision: str | None = "mem_007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("episodes", sa.Column("occurred_at", sa.DateTime(timezone=True),
                                        nullable=True))
    op.execute("UPDATE episodes SET occurred_at = created_at")
    op.alter_column("episodes", "occurred_at", nullable=False, server_default=sa.func.now())
    op.execute("CREATE SEQUENCE episodes_sequence_seq AS bigint")
    op.add_column("episodes", sa.Column(
        "sequence", sa.BigInteger(), nullable=True,
        server_default=sa.text("nextval('episodes_sequence_seq')")))
    op.execute("ALTER SEQUENCE episodes_sequence_seq OWNED BY episodes.sequence")
    op.execute("""
        UPDATE episodes e SET sequence = numbered.n
        FROM (SELECT id, nextval('episodes_sequence_seq') AS n
              FROM (SELECT id FROM episodes ORDER BY created_at, id) ordered) numbered
        WHERE e.id = numbered.id
    """)
    op.alter_column("episodes", "sequence", nullable=False)
    op.create_index("ix_episodes_tenant_occurred", "episodes", ["tenant_id", "occurred_at"])
    op.create_index("ix_episodes_tenant_session_sequence", "episodes",
                    ["tenant_id", "butler", "session_id", "sequence"])


def downgrade() -> None:
    op.drop_index("ix_episodes_tenant_session_sequence", table_name="episodes")
    op.drop_index("ix_episodes_tenant_occurred", table_name="episodes")
    op.drop_column("episodes", "sequence")
    op.drop_column("episodes", "occurred_at")
