"""mem_002 entities: the identity registry and entity-keyed fact uniqueness.

Revision ID: mem_002
Revises: mem_001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, UUID

revision: str = "mem_002"
down_revision: str | None = "mem_001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "entities",
        sa.Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=sa.text("gen_random_uuid()")),
        sa.Column("tenant_id", sa.Text(), nullable=False, server_default="default"),
        sa.Column("canonical_name", sa.String(), nullable=False),
        sa.Column("entity_type", sa.String(), nullable=False),
        sa.Column("aliases", ARRAY(sa.Text()), nullable=False,
                  server_default=sa.text("'{}'::text[]")),
        sa.Column("metadata", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.UniqueConstraint("tenant_id", "canonical_name", "entity_type",
                            name="uq_entities_tenant_name_type"),
        sa.CheckConstraint("entity_type IN ('person', 'organization', 'place', 'other')",
                           name="entity_type"),
    )
    op.create_index("ix_entities_tenant_name", "entities", ["tenant_id", "canonical_name"])
    op.create_index("ix_entities_aliases", "entities", ["aliases"], postgresql_using="gin")
    op.create_index("ix_entities_metadata", "entities", ["metadata"], postgresql_using="gin")

    op.add_column("facts", sa.Column("entity_id", UUID(as_uuid=True), nullable=True))
    op.create_foreign_key("fk_facts_entity_id_entities", "facts", "entities",
                          ["entity_id"], ["id"], ondelete="RESTRICT")
    op.create_index("ix_facts_entity_id", "facts", ["entity_id"])
    op.create_index("uq_facts_entity_scope_predicate_active", "facts",
                    ["tenant_id", "entity_id", "scope", "predicate"], unique=True,
                    postgresql_where=sa.text("entity_id IS NOT NULL AND validity = 'active'"))
    op.create_index("uq_facts_scope_subject_predicate_active", "facts",
                    ["tenant_id", "scope", "subject", "predicate"], unique=True,
                    postgresql_where=sa.text("entity_id IS NULL AND validity = 'active'"))


def downgrade() -> None:
    op.drop_index("uq_facts_scope_subject_predicate_active", table_name="facts")
    op.drop_index("uq_facts_entity_scope_predicate_active", table_name="facts")
    op.drop_index("ix_facts_entity_id", table_name="facts")
    op.drop_constraint("fk_facts_entity_id_entities", "facts", type_="foreignkey")
    op.drop_column("facts", "entity_id")
    op.drop_table("entities")
