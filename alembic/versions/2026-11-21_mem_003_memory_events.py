"""mem_003 memory_events: the append-only audit stream.

Revision ID: mem_003
Revises: mem_002
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision: str = "mem_003"
down_revision: str | None = "mem_002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_events",
        sa.Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=sa.text("gen_random_uuid()")),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=True),
        sa.Column("tenant_id", sa.Text(), nullable=True),
        sa.Column("payload", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
    )
    op.execute("CREATE INDEX ix_memory_events_type_created ON memory_events "
               "(event_type, created_at DESC)")
    op.execute("CREATE INDEX ix_memory_events_tenant_created ON memory_events "
               "(tenant_id, created_at DESC)")


def downgrade() -> None:
    op.drop_table("memory_events")
