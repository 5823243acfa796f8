"""mem_004 rule_applications and embedding_versions (audit tables).

Revision ID: mem_004
Revises: mem_003
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision: str = "mem_004"
down_revision: str | None = "mem_003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MEMORY_TABLES = ("episodes", "facts", "rules")


def upgrade() -> None:
    op.create_table(
        "rule_applications",
        sa.Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=sa.text("gen_random_uuid()")),
        sa.Column("tenant_id", sa.Text(), nullable=False, server_default="default"),
        sa.Column("rule_id", UUID(as_uuid=True),
                  sa.ForeignKey("rules.id", ondelete="CASCADE"), nullable=False),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("context", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.CheckConstraint("outcome IN ('helpful', 'harmful')", name="outcome"),
    )
    op.execute("CREATE INDEX ix_rule_applications_rule_created ON rule_applications "
               "(rule_id, created_at DESC)")

    op.create_table(
        "embedding_versions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("model_name", sa.Text(), nullable=False),
        sa.Column("model_version", sa.Text(), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.UniqueConstraint("model_name", "model_version", "dimensions",
                            name="uq_embedding_versions_model"),
    )
    for table in MEMORY_TABLES:
        op.add_column(table, sa.Column("embedding_version_id", sa.Integer(), nullable=True))
        op.create_foreign_key(f"fk_{table}_embedding_version_id_embedding_versions", table,
                              "embedding_versions", ["embedding_version_id"], ["id"])


def downgrade() -> None:
    for table in MEMORY_TABLES:
        op.drop_constraint(f"fk_{table}_embedding_version_id_embedding_versions", table,
                           type_="foreignkey")
        op.drop_column(table, "embedding_version_id")
    op.drop_table("embedding_versions")
    op.drop_table("rule_applications")
