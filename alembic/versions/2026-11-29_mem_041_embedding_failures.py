"""mem_041 embedding failures: the memories the embedding backlog set aside, and the lease
that lets one server process at a time run the backlog.

A memory whose text the remote model refuses (too long, malformed) or answers badly, alone
and every time, would stop the backlog at the same row on every pass. Each such failure is
recorded here with when to try it again (later after each failure, at most a day); the
backlog leaves the row out until then and goes on with the others.

Every server process runs the backlog; the lease row says which one's pass is running, so
the paid model calls are not made once per process.

Revision ID: mem_041
Revises: mem_040
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls

revision: str = "mem_041"
down_revision: str | None = "mem_040"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "embedding_failures",
        sa.Column("tenant_id", sa.Text(), primary_key=True),
        sa.Column("memory_type", sa.Text(), primary_key=True),
        sa.Column("memory_id", sa.Uuid(), primary_key=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.CheckConstraint("memory_type IN ('episode', 'fact', 'rule')",
                           name="ck_embedding_failures_memory_type"),
    )
    enable_tenant_rls(op, "embedding_failures")
    op.create_table(
        "embedding_backlog_lease",
        sa.Column("id", sa.SmallInteger(), primary_key=True, autoincrement=False),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_embedding_backlog_lease_one_row"),
    )


def downgrade() -> None:
    op.drop_table("embedding_backlog_lease")
    disable_tenant_rls(op, "embedding_failures")
    op.drop_table("embedding_failures")
