"""mem_026 keys limited to butlers, enforced by restrictive row-level policies.

`api_keys.butlers` is NULL for a key that reaches every butler of its tenant, or the butlers
it is limited to. A request of a limited key sets `engram.butlers` (and `engram.key_id`) for
its transaction, and the restrictive `butler_limit_*` policies of app/core/rls.py (AND-ed with the
tenant policy) then hide every row of other butlers; `engram_row_visible` lets a link's policy
ask whether its ends are visible.

Revision ID: mem_026
Revises: mem_027
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY

from alembic import op
from app.core.rls import (
    BUTLER_LIMITS,
    ROW_VISIBLE_FUNCTION,
    butler_policy_statements,
    drop_butler_policy_statements,
)

revision: str = "mem_026"
down_revision: str | None = "mem_027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("butlers", ARRAY(sa.Text()), nullable=True))
    op.create_check_constraint("ck_api_keys_butlers", "api_keys",
                               "butlers IS NULL OR cardinality(butlers) > 0")
    op.execute(ROW_VISIBLE_FUNCTION)
    for table in BUTLER_LIMITS:
        for statement in butler_policy_statements(table):
            op.execute(statement)


def downgrade() -> None:
    for table in BUTLER_LIMITS:
        for statement in drop_butler_policy_statements(table):
            op.execute(statement)
    op.execute("DROP FUNCTION IF EXISTS engram_row_visible(text, uuid)")
    op.drop_constraint("ck_api_keys_butlers", "api_keys", type_="check")
    op.drop_column("api_keys", "butlers")
