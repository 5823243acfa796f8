"""mem_006 durable background jobs.

Revision ID: mem_006
Revises: mem_005
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision: str = "mem_006"
down_revision: str | None = "mem_005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=sa.text("gen_random_uuid()")),
        # NULL: a system job (enqueued by the scheduler) that spans every tenant.
        sa.Column("tenant_id", sa.Text(), nullable=True),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False, server_default="queued"),
        sa.Column("params", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("result", JSONB(), nullable=True),
        sa.Column("errors", JSONB(), nullable=False, server_default=sa.text("'[]'::jsonb")),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("scheduled_for", sa.DateTime(timezone=True), nullable=True),
        sa.Column("worker_id", sa.Text(), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("kind IN ('consolidation', 'decay', 'cleanup')", name="kind"),
        sa.CheckConstraint("status IN ('queued', 'running', 'succeeded', 'failed')",
                           name="status"),
    )
    # The worker's claim query: oldest claimable job first.
    op.create_index("ix_jobs_claimable", "jobs", ["created_at"],
                    postgresql_where=sa.text("status IN ('queued', 'running')"))
    op.execute("CREATE INDEX ix_jobs_tenant_created ON jobs (tenant_id, created_at DESC, id DESC)")
    # One scheduled job per kind and slot, whichever replica's scheduler inserts it first.
    op.create_index("uq_jobs_kind_scheduled_for", "jobs", ["kind", "scheduled_for"],
                    unique=True, postgresql_where=sa.text("scheduled_for IS NOT NULL"))


def downgrade() -> None:
    op.drop_table("jobs")
