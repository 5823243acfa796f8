"""mem_006 durable background jobs.

Revision ID: mem_006
Revises: mem_005
Create Date: 2026-11-21
"""

from collections.abc import Sequence

revision: str = "mem_006"
down_revision: str | None = "mem_005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
