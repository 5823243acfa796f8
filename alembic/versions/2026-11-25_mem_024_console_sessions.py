"""mem_024 console sessions and read-only keys.

`api_keys.access` is `write` (every key so far) or `read`: a read key may look but not change.
`console_sessions` holds the web console's signed-in browsers: the hash of the cookie's token,
the tenant and key it was opened with, its CSRF token and when it ends. Deleting or revoking
the key ends its sessions (the lookup joins the key).

Revision ID: mem_024
Revises: mem_023
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID

from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls

revision: str = "mem_024"
down_revision: str | None = "mem_023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("access", sa.Text(), nullable=False,
                                        server_default="write"))
    op.create_check_constraint("ck_api_keys_access", "api_keys", "access IN ('read', 'write')")
    op.create_table(
        "console_sessions",
        sa.Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=sa.text("gen_random_uuid()")),
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("token_hash", sa.Text(), nullable=False),
        sa.Column("key_id", UUID(as_uuid=True),
                  sa.ForeignKey("api_keys.id", ondelete="CASCADE")),
        sa.Column("csrf_token", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_console_sessions_token_hash"),
    )
    op.create_index("ix_console_sessions_expires", "console_sessions", ["expires_at"])
    enable_tenant_rls(op, "console_sessions")


def downgrade() -> None:
    disable_tenant_rls(op, "console_sessions")
    op.drop_table("console_sessions")
    op.drop_constraint("ck_api_keys_access", "api_keys", type_="check")
    op.drop_column("api_keys", "access")
