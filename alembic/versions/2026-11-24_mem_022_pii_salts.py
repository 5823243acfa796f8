"""mem_022 PII salts: the salt of each tenant's PII hashes, made the first time one is needed.

The PII scrub replaces a match by a salted hash. Without a configured `runs.pii_hash_salt` a
tenant's salt is a random value generated once and kept here, so it survives restarts and
every process hashes a value alike.

Revision ID: mem_022
Revises: mem_021
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls

revision: str = "mem_022"
down_revision: str | None = "mem_021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "pii_salts",
        sa.Column("tenant_id", sa.Text(), primary_key=True),
        sa.Column("salt", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
    )
    enable_tenant_rls(op, "pii_salts")


def downgrade() -> None:
    disable_tenant_rls(op, "pii_salts")
    op.drop_table("pii_salts")
