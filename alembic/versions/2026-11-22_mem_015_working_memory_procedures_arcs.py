"""mem_015 working memory, procedures and narrative arcs.

* `working_memories`: one record per (tenant, agent_id, session_id); `revision` is a fresh
  random token on every write (the ETag), `expires_at` moves forward on every use.
* `procedures`: learned multi-step workflows. The name is unique per (tenant, agent) among
  current versions (`superseded_by IS NULL`); every version keeps its own row and counters.
  `success_rate` and `avg_duration_ms` are generated from the exact integer counters.
* `arcs`: narrative arcs (stories of related events; an episode is an observation here).
* `memory_links` may start at a procedure (its `derived_from` edges to what it was learned
  from); deleting a procedure or an arc deletes its links like the memory tables do.
* `jobs.kind` admits `arc_boundaries`.

Revision ID: mem_015
Revises: mem_014
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

revision: str = "mem_015"
down_revision: str | None = "mem_014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DIMENSIONS = 384
OLD_LINK_SOURCES = ("('episode', 'fact', 'rule', 'run', 'run_message', 'run_feedback', "
                    "'agent_event')")
NEW_LINK_SOURCES = ("('episode', 'fact', 'rule', 'run', 'run_message', 'run_feedback', "
                    "'agent_event', 'procedure')")
OLD_JOB_KINDS = "('consolidation', 'decay', 'cleanup', 'erasure', 'pii_scrub', 'reflection')"
NEW_JOB_KINDS = ("('consolidation', 'decay', 'cleanup', 'erasure', 'pii_scrub', 'reflection', "
                 "'arc_boundaries')")
NEW_TABLES = ("working_memories", "procedures", "arcs")


def _id() -> sa.Column:
    return sa.Column("id", UUID(as_uuid=True), primary_key=True,
                     server_default=sa.text("gen_random_uuid()"))


def _tenant() -> sa.Column:
    return sa.Column("tenant_id", sa.Text(), nullable=False)


def _now(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False,
                     server_default=sa.func.now())


def _jsonb(name: str, default: str) -> sa.Column:
    return sa.Column(name, JSONB(), nullable=False, server_default=sa.text(f"'{default}'::jsonb"))


def _search_columns() -> list[sa.Column]:
    return [
        sa.Column("embedding", Vector(DIMENSIONS), nullable=True),
        sa.Column("search_vector", TSVECTOR(), nullable=True),
        sa.Column("embedding_version_id", sa.Integer(),
                  sa.ForeignKey("embedding_versions.id"), nullable=True),
    ]


def _search_indexes(table: str) -> None:
    op.create_index(f"ix_{table}_search_vector", table, ["search_vector"],
                    postgresql_using="gin")
    op.execute(f"CREATE INDEX ix_{table}_embedding_hnsw ON {table} "
               "USING hnsw (embedding vector_cosine_ops)")


def upgrade() -> None:
    op.create_table(
        "working_memories",
        _id(),
        _tenant(),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        _jsonb("active_context", "{}"),
        _jsonb("scratchpad", "{}"),
        sa.Column("retrieved_memory_ids", ARRAY(UUID(as_uuid=True)), nullable=False,
                  server_default=sa.text("'{}'::uuid[]")),
        _jsonb("decisions", "[]"),
        sa.Column("version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("revision", UUID(as_uuid=True), nullable=False,
                  server_default=sa.text("gen_random_uuid()")),
        sa.Column("ttl_seconds", sa.Integer(), nullable=False),
        _now("created_at"),
        _now("updated_at"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("tenant_id", "agent_id", "session_id",
                            name="uq_working_memories_tenant_agent_session"),
        sa.CheckConstraint("ttl_seconds > 0", name="ttl_positive"),
    )
    op.create_index("ix_working_memories_expires_at", "working_memories", ["expires_at"])

    op.create_table(
        "procedures",
        _id(),
        _tenant(),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False, server_default=""),
        _jsonb("steps", "[]"),
        _jsonb("preconditions", "{}"),
        _jsonb("postconditions", "{}"),
        _jsonb("learned_from", "[]"),
        sa.Column("execution_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("success_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("timed_count", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("total_duration_ms", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("success_rate", sa.Float(), sa.Computed(
            "CASE WHEN execution_count > 0 "
            "THEN success_count::float8 / execution_count END", persisted=True)),
        sa.Column("avg_duration_ms", sa.Float(), sa.Computed(
            "CASE WHEN timed_count > 0 "
            "THEN total_duration_ms::float8 / timed_count END", persisted=True)),
        sa.Column("last_executed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.Text(), nullable=False, server_default="draft"),
        sa.Column("version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("superseded_by", UUID(as_uuid=True),
                  sa.ForeignKey("procedures.id", ondelete="SET NULL", deferrable=True,
                                initially="DEFERRED"), nullable=True),
        *_search_columns(),
        _now("created_at"),
        _now("updated_at"),
        sa.CheckConstraint("status IN ('draft', 'active', 'deprecated')", name="status"),
        sa.CheckConstraint("success_count <= execution_count", name="success_le_executions"),
        sa.UniqueConstraint("tenant_id", "agent_id", "name", "version",
                            name="uq_procedures_tenant_agent_name_version"),
    )
    op.create_index("uq_procedures_current_name", "procedures",
                    ["tenant_id", "agent_id", "name"], unique=True,
                    postgresql_where=sa.text("superseded_by IS NULL"))
    op.execute("CREATE INDEX ix_procedures_tenant_created ON procedures "
               "(tenant_id, created_at DESC, id DESC)")
    _search_indexes("procedures")

    op.create_table(
        "arcs",
        _id(),
        _tenant(),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False, server_default=""),
        sa.Column("arc_type", sa.Text(), nullable=False),
        sa.Column("entity_ids", ARRAY(UUID(as_uuid=True)), nullable=False,
                  server_default=sa.text("'{}'::uuid[]")),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        _jsonb("key_events", "[]"),
        sa.Column("outcome", sa.Text(), nullable=True),
        _jsonb("lessons", "[]"),
        sa.Column("status", sa.Text(), nullable=False, server_default="active"),
        *_search_columns(),
        _now("created_at"),
        _now("updated_at"),
        sa.CheckConstraint("status IN ('draft', 'active', 'completed', 'abandoned')",
                           name="status"),
        sa.CheckConstraint("ended_at IS NULL OR ended_at >= started_at", name="time_order"),
    )
    op.execute("CREATE INDEX ix_arcs_tenant_created ON arcs (tenant_id, created_at DESC, id DESC)")
    op.create_index("ix_arcs_tenant_scope_started", "arcs", ["tenant_id", "scope", "started_at"])
    op.create_index("ix_arcs_entity_ids", "arcs", ["entity_ids"], postgresql_using="gin")
    _search_indexes("arcs")

    op.drop_constraint(op.f("ck_memory_links_source_type"), "memory_links", type_="check")
    op.create_check_constraint(op.f("ck_memory_links_source_type"), "memory_links",
                               f"source_type IN {NEW_LINK_SOURCES}")
    op.execute("CREATE TRIGGER trg_procedures_delete_links AFTER DELETE ON procedures "
               "REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT "
               "EXECUTE FUNCTION engram_delete_links_of_deleted('procedure')")

    op.drop_constraint(op.f("ck_jobs_kind"), "jobs", type_="check")
    op.create_check_constraint(op.f("ck_jobs_kind"), "jobs", f"kind IN {NEW_JOB_KINDS}")
    for table in NEW_TABLES:
        enable_tenant_rls(op, table)


def downgrade() -> None:
    for table in NEW_TABLES:
        disable_tenant_rls(op, table)
    op.execute("DELETE FROM jobs WHERE kind = 'arc_boundaries'")
    op.drop_constraint(op.f("ck_jobs_kind"), "jobs", type_="check")
    op.create_check_constraint(op.f("ck_jobs_kind"), "jobs", f"kind IN {OLD_JOB_KINDS}")
    op.execute("DROP TRIGGER IF EXISTS trg_procedures_delete_links ON procedures")
    op.execute("DELETE FROM memory_links WHERE source_type = 'procedure'")
    op.drop_constraint(op.f("ck_memory_links_source_type"), "memory_links", type_="check")
    op.create_check_constraint(op.f("ck_memory_links_source_type"), "memory_links",
                               f"source_type IN {OLD_LINK_SOURCES}")
    op.drop_table("arcs")
    op.drop_table("procedures")
    op.drop_table("working_memories")
