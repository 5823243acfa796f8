"""mem_044 passage vectors by owner: HNSW indexes of the passages of facts and of rules alone.

Every memory type's passages share one table and one HNSW index, nearly all of them
episodes'. The semantic leg of facts (and of rules) walked that index until it had found
`limit` passages of its own type: through every passage of a store whose facts have none,
or up to `hnsw_max_scan_tuples` of them. At 1,000,000 episodes with 1,827 passages, the walk
for facts took 8.8 of the search statement's 33 ms. Each of these indexes holds one type's
passages only, and the leg names its type's owner column, so the walk reads those alone.
Each index is made like the table's own (the column's type and operator class).

Revision ID: mem_044
Revises: mem_043
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "mem_044"
down_revision: str | None = "mem_043"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SHARED = "ix_passages_embedding_hnsw"
OWNERS = ("fact", "rule")


def upgrade() -> None:
    definition = op.get_bind().scalar(
        sa.text("SELECT pg_get_indexdef(to_regclass(:name))"), {"name": SHARED}
    )
    if definition is None:
        return
    for owner in OWNERS:
        op.execute(
            definition.replace(f"INDEX {SHARED} ", f"INDEX ix_passages_{owner}_embedding_hnsw ", 1)
            + f" WHERE ({owner}_id IS NOT NULL)"
        )


def downgrade() -> None:
    for owner in OWNERS:
        op.execute(f"DROP INDEX IF EXISTS ix_passages_{owner}_embedding_hnsw")
