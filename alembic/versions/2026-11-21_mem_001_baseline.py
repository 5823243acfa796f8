"""mem_001 baseline: episodes, facts, rules and memory_links.

Revision ID: mem_001
Revises:
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR, UUID

revision: str = "mem_001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = ("memory",)
depends_on: str | Sequence[str] | None = None

DIMENSIONS = 384
RELATIONS = "('derived_from', 'supports', 'contradicts', 'supersedes', 'related_to')"
MEMORY_TYPES = "('episode', 'fact', 'rule')"
PERMANENCE = "('permanent', 'stable', 'standard', 'volatile', 'ephemeral')"


def _id() -> sa.Column:
    return sa.Column("id", UUID(as_uuid=True), primary_key=True,
                     server_default=sa.text("gen_random_uuid()"))


def _tenant() -> sa.Column:
    return sa.Column("tenant_id", sa.Text(), nullable=False, server_default="default")


def _now(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now())


def _ts(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=True)


def _jsonb(name: str, default: str) -> sa.Column:
    return sa.Column(name, JSONB(), nullable=False, server_default=sa.text(f"'{default}'::jsonb"))


def _search_columns() -> list[sa.Column]:
    return [
        sa.Column("embedding", Vector(DIMENSIONS), nullable=True),
        sa.Column("search_vector", TSVECTOR(), nullable=True),
    ]


def _search_indexes(table: str) -> None:
    op.create_index(f"ix_{table}_search_vector", table, ["search_vector"], postgresql_using="gin")
    # HNSW instead of the origin's IVFFlat(lists=20): IVFFlat built on an empty table has
    # useless centroids; HNSW needs no training and keeps recall as the table grows.
    op.execute(
        f"CREATE INDEX ix_{table}_embedding_hnsw ON {table} "
        "USING hnsw (embedding vector_cosine_ops)"
    )


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public")
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public")
    # No uuid-ossp: ids use the built-in gen_random_uuid(), so the extension is
    # created only where the server ships it (the embedded PostgreSQL does not).
    op.execute(
        "DO $$ BEGIN "
        "IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'uuid-ossp') THEN "
        'CREATE EXTENSION IF NOT EXISTS "uuid-ossp" WITH SCHEMA public; '
        "END IF; END $$"
    )

    op.create_table(
        "episodes",
        _id(),
        _tenant(),
        sa.Column("butler", sa.Text(), nullable=False),
        sa.Column("session_id", UUID(as_uuid=True), nullable=True),
        sa.Column("content", sa.Text(), nullable=False),
        *_search_columns(),
        sa.Column("importance", sa.Float(), nullable=False, server_default="5.0"),
        sa.Column("reference_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("consolidated", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("consolidation_status", sa.String(20), nullable=False,
                  server_default="pending"),
        sa.Column("retry_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("last_error", sa.Text(), nullable=True),
        _now("created_at"),
        _ts("last_referenced_at"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True,
                  server_default=sa.text("now() + interval '7 days'")),
        _jsonb("metadata", "{}"),
        sa.CheckConstraint(
            "consolidation_status IN ('pending', 'consolidated', 'failed')",
            name="consolidation_status",
        ),
    )
    op.execute("CREATE INDEX ix_episodes_butler_created ON episodes "
               "(tenant_id, butler, created_at DESC)")
    op.create_index("ix_episodes_expires_at", "episodes", ["expires_at"],
                    postgresql_where=sa.text("expires_at IS NOT NULL"))
    op.create_index("ix_episodes_pending", "episodes", ["tenant_id", "butler", "created_at"],
                    postgresql_where=sa.text("consolidation_status = 'pending'"))
    _search_indexes("episodes")

    op.create_table(
        "facts",
        _id(),
        _tenant(),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("predicate", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        *_search_columns(),
        sa.Column("importance", sa.Float(), nullable=False, server_default="5.0"),
        sa.Column("confidence", sa.Float(), nullable=False, server_default="1.0"),
        sa.Column("decay_rate", sa.Float(), nullable=False, server_default="0.008"),
        sa.Column("permanence", sa.Text(), nullable=False, server_default="standard"),
        sa.Column("source_butler", sa.Text(), nullable=True),
        sa.Column("source_episode_id", UUID(as_uuid=True),
                  sa.ForeignKey("episodes.id", ondelete="SET NULL"), nullable=True),
        sa.Column("supersedes_id", UUID(as_uuid=True),
                  sa.ForeignKey("facts.id", ondelete="SET NULL"), nullable=True),
        sa.Column("validity", sa.Text(), nullable=False, server_default="active"),
        sa.Column("scope", sa.Text(), nullable=False, server_default="global"),
        sa.Column("reference_count", sa.Integer(), nullable=False, server_default="0"),
        _now("created_at"),
        _ts("last_referenced_at"),
        _ts("last_confirmed_at"),
        _jsonb("tags", "[]"),
        _jsonb("metadata", "{}"),
        sa.CheckConstraint(
            "validity IN ('active', 'superseded', 'expired', 'retracted')", name="validity"
        ),
        sa.CheckConstraint(f"permanence IN {PERMANENCE}", name="permanence"),
    )
    op.create_index("ix_facts_scope_validity", "facts", ["tenant_id", "scope", "validity"],
                    postgresql_where=sa.text("validity = 'active'"))
    op.create_index("ix_facts_subject_predicate", "facts", ["tenant_id", "subject", "predicate"])
    op.create_index("ix_facts_tags", "facts", ["tags"], postgresql_using="gin")
    op.create_index("ix_facts_supersedes_id", "facts", ["supersedes_id"])
    _search_indexes("facts")

    op.create_table(
        "rules",
        _id(),
        _tenant(),
        sa.Column("content", sa.Text(), nullable=False),
        *_search_columns(),
        sa.Column("scope", sa.Text(), nullable=False, server_default="global"),
        sa.Column("maturity", sa.Text(), nullable=False, server_default="candidate"),
        sa.Column("confidence", sa.Float(), nullable=False, server_default="0.5"),
        sa.Column("decay_rate", sa.Float(), nullable=False, server_default="0.008"),
        sa.Column("permanence", sa.Text(), nullable=False, server_default="standard"),
        sa.Column("effectiveness_score", sa.Float(), nullable=False, server_default="0.0"),
        sa.Column("applied_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("success_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("harmful_count", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("source_episode_id", UUID(as_uuid=True),
                  sa.ForeignKey("episodes.id", ondelete="SET NULL"), nullable=True),
        sa.Column("source_butler", sa.Text(), nullable=True),
        _now("created_at"),
        _ts("last_applied_at"),
        _ts("last_evaluated_at"),
        _ts("last_confirmed_at"),
        sa.Column("reference_count", sa.Integer(), nullable=False, server_default="0"),
        _ts("last_referenced_at"),
        _jsonb("tags", "[]"),
        _jsonb("metadata", "{}"),
        sa.CheckConstraint(
            "maturity IN ('candidate', 'established', 'proven', 'anti_pattern')", name="maturity"
        ),
        sa.CheckConstraint(f"permanence IN {PERMANENCE}", name="permanence"),
    )
    op.create_index("ix_rules_scope_maturity", "rules", ["tenant_id", "scope", "maturity"])
    _search_indexes("rules")

    op.create_table(
        "memory_links",
        _tenant(),
        sa.Column("source_type", sa.Text(), nullable=False),
        sa.Column("source_id", UUID(as_uuid=True), nullable=False),
        sa.Column("target_type", sa.Text(), nullable=False),
        sa.Column("target_id", UUID(as_uuid=True), nullable=False),
        sa.Column("relation", sa.Text(), nullable=False),
        _now("created_at"),
        sa.PrimaryKeyConstraint("source_type", "source_id", "target_type", "target_id",
                                name="pk_memory_links"),
        sa.CheckConstraint(f"relation IN {RELATIONS}", name="relation"),
        sa.CheckConstraint(f"source_type IN {MEMORY_TYPES}", name="source_type"),
        sa.CheckConstraint(f"target_type IN {MEMORY_TYPES}", name="target_type"),
    )
    op.create_index("ix_memory_links_target", "memory_links", ["target_type", "target_id"])


def downgrade() -> None:
    op.drop_table("memory_links")
    op.drop_table("rules")
    op.drop_table("facts")
    op.drop_table("episodes")
