"""mem_005 entity search indexes (trigram) for resolve.

Revision ID: mem_005
Revises: mem_004
Create Date: 2026-11-21
"""

from collections.abc import Sequence

revision: str = "mem_005"
down_revision: str | None = "mem_004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
