"""mem_020 reflection consolidation: which reflections the consolidation job has read.

A reflection (an `agent.reflected` ledger event) is input to consolidation like an
episode: the LLM may turn its belief into facts and rules, linked `derived_from` the event.
The ledger is append-only, so the mark lives in a table of its own holding only the event's
id (no second copy of the event); deleting or erasing the event deletes its mark.

Revision ID: mem_020
Revises: mem_017
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls

revision: str = "mem_020"
down_revision: str | None = "mem_017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "reflection_consolidations",
        sa.Column("event_id", postgresql.UUID(as_uuid=True),
                  sa.ForeignKey("agent_events.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("consolidated_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
    )
    op.create_index("ix_reflection_consolidations_tenant", "reflection_consolidations",
                    ["tenant_id"])
    enable_tenant_rls(op, "reflection_consolidations")


def downgrade() -> None:
    disable_tenant_rls(op, "reflection_consolidations")
    op.drop_table("reflection_consolidations")
