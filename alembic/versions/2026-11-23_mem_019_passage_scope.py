"""mem_019 passage scope: each passage carries its memory's scope (an episode's butler).

A scoped search then finds a small scope's passages through an index on (tenant_id, scope)
and ranks them exactly, instead of walking the HNSW index of every tenant's passages and
dropping those of other scopes one by one; the planner chooses by the scope's size, as it
already does for the memories' own vectors. A trigger fills the column from the owner row,
and scopes never change, so it stays right.

Revision ID: mem_019
Revises: mem_016
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "mem_019"
down_revision: str | None = "mem_016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("passages", sa.Column("scope", sa.Text(), nullable=True))
    op.execute("SELECT set_config('engram.system', 'on', true)")
    op.execute("UPDATE passages p SET scope = e.butler FROM episodes e WHERE p.episode_id = e.id")
    op.execute("UPDATE passages p SET scope = f.scope FROM facts f WHERE p.fact_id = f.id")
    op.execute("UPDATE passages p SET scope = r.scope FROM rules r WHERE p.rule_id = r.id")
    op.execute("""
        CREATE FUNCTION engram_passage_scope() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.episode_id IS NOT NULL THEN
                SELECT butler INTO NEW.scope FROM episodes WHERE id = NEW.episode_id;
            ELSIF NEW.fact_id IS NOT NULL THEN
                SELECT scope INTO NEW.scope FROM facts WHERE id = NEW.fact_id;
            ELSIF NEW.rule_id IS NOT NULL THEN
                SELECT scope INTO NEW.scope FROM rules WHERE id = NEW.rule_id;
            END IF;
            RETURN NEW;
        END $$""")
    op.execute("CREATE TRIGGER trg_passages_scope BEFORE INSERT ON passages "
               "FOR EACH ROW EXECUTE FUNCTION engram_passage_scope()")
    op.create_index("ix_passages_tenant_scope", "passages", ["tenant_id", "scope"])


def downgrade() -> None:
    op.drop_index("ix_passages_tenant_scope", table_name="passages")
    op.execute("DROP TRIGGER trg_passages_scope ON passages")
    op.execute("DROP FUNCTION engram_passage_scope()")
    op.drop_column("passages", "scope")
