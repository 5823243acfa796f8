"""mem_014 runs and the agent event ledger.

* `runs`, `run_messages`, `run_feedback`: task runs, their messages by role and the
  critic's or human's feedback; runs and messages carry an embedding and a tsvector.
* `agent_events`: the append-only ledger that agent memory views are computed
  from; a reflection is an event of kind `agent.reflected`, its `based_on` ids are links.
* Every new table has tenant_id without a server default.
* memory_links: the new tables may be link ends, and `based_on` is a relation; the
  statement-level trigger of mem_005 deletes the links of deleted rows of the new tables too.
* jobs.kind: `pii_scrub` and `reflection`.

Revision ID: mem_014
Revises: mem_013
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR, UUID

revision: str = "mem_014"
down_revision: str | None = "mem_013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DIMENSIONS = 384
OLD_RELATIONS = "('derived_from', 'supports', 'contradicts', 'supersedes', 'related_to')"
NEW_RELATIONS = ("('derived_from', 'supports', 'contradicts', 'supersedes', 'related_to', "
                 "'based_on')")
OLD_TYPES = "('episode', 'fact', 'rule')"
NEW_TYPES = "('episode', 'fact', 'rule', 'run', 'run_message', 'run_feedback', 'agent_event')"
OLD_JOB_KINDS = "('consolidation', 'decay', 'cleanup', 'erasure')"
NEW_JOB_KINDS = "('consolidation', 'decay', 'cleanup', 'erasure', 'pii_scrub', 'reflection')"
NEW_TABLES = ("runs", "run_messages", "run_feedback", "agent_events")
LINKED_TABLES = {"runs": "run", "run_messages": "run_message", "run_feedback": "run_feedback",
                 "agent_events": "agent_event"}


def _id() -> sa.Column:
    return sa.Column("id", UUID(as_uuid=True), primary_key=True,
                     server_default=sa.text("gen_random_uuid()"))


def _tenant() -> sa.Column:
    return sa.Column("tenant_id", sa.Text(), nullable=False)


def _now(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False,
                     server_default=sa.func.now())


def _search_columns() -> list[sa.Column]:
    return [
        sa.Column("embedding", Vector(DIMENSIONS)),
        sa.Column("search_vector", TSVECTOR()),
        sa.Column("embedding_version_id", sa.Integer(),
                  sa.ForeignKey("embedding_versions.id", name=None)),
    ]


def _search_indexes(table: str) -> None:
    op.create_index(f"ix_{table}_search_vector", table, ["search_vector"],
                    postgresql_using="gin")
    op.execute(f"CREATE INDEX ix_{table}_embedding_hnsw ON {table} "
               "USING hnsw (embedding vector_cosine_ops)")


def _set_check(table: str, name: str, condition: str) -> None:
    op.execute(f"ALTER TABLE {table} DROP CONSTRAINT ck_{table}_{name}")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT ck_{table}_{name} CHECK ({condition})")


def upgrade() -> None:
    op.create_table(
        "runs",
        _id(),
        _tenant(),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text()),
        sa.Column("agent_version", sa.Text()),
        sa.Column("task_version", sa.Text()),
        sa.Column("rubric_version", sa.Text()),
        _now("started_at"),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("score_numeric", sa.Float()),
        sa.Column("success", sa.Boolean()),
        sa.Column("meta", JSONB(), nullable=False, server_default=sa.text("'{}'::jsonb")),
        *_search_columns(),
        _now("created_at"),
    )
    op.create_index("ix_runs_tenant_created", "runs",
                    ["tenant_id", sa.text("created_at DESC"), sa.text("id DESC")])
    op.create_index("ix_runs_tenant_task", "runs", ["tenant_id", "task_id"])
    _search_indexes("runs")

    op.create_table(
        "run_messages",
        _id(),
        _tenant(),
        sa.Column("run_id", UUID(as_uuid=True),
                  sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("scrubbed_at", sa.DateTime(timezone=True)),
        *_search_columns(),
        _now("created_at"),
        sa.CheckConstraint("role IN ('planner', 'executor', 'critic', 'human')", name="role"),
        sa.CheckConstraint("token_count >= 0", name="token_count"),
    )
    op.create_index("ix_run_messages_run_position", "run_messages", ["run_id", "position"])
    op.create_index("ix_run_messages_tenant_position", "run_messages",
                    ["tenant_id", "position"])
    _search_indexes("run_messages")

    op.create_table(
        "run_feedback",
        _id(),
        _tenant(),
        sa.Column("run_id", UUID(as_uuid=True),
                  sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("rationale", sa.Text()),
        sa.Column("lesson_rule_id", UUID(as_uuid=True),
                  sa.ForeignKey("rules.id", ondelete="SET NULL")),
        _now("created_at"),
        sa.CheckConstraint("source IN ('critic', 'human')", name="source"),
        sa.CheckConstraint("rating >= 0 AND rating <= 1", name="rating"),
    )
    op.create_index("ix_run_feedback_run", "run_feedback", ["run_id", "created_at"])

    op.create_table(
        "agent_events",
        _id(),
        _tenant(),
        sa.Column("ledger", sa.Text(), nullable=False),
        sa.Column("position", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("agent_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("visibility", sa.Text(), nullable=False),
        *_search_columns(),
        _now("created_at"),
        sa.CheckConstraint("visibility IN ('private', 'global')", name="visibility"),
        sa.CheckConstraint("turn >= 0", name="turn"),
    )
    op.create_index("ix_agent_events_ledger_position", "agent_events",
                    ["tenant_id", "ledger", "position"])
    op.create_index("ix_agent_events_ledger_kind", "agent_events",
                    ["tenant_id", "ledger", "kind", "position"])
    _search_indexes("agent_events")

    _set_check("memory_links", "relation", f"relation IN {NEW_RELATIONS}")
    _set_check("memory_links", "source_type", f"source_type IN {NEW_TYPES}")
    _set_check("memory_links", "target_type", f"target_type IN {NEW_TYPES}")
    _set_check("jobs", "kind", f"kind IN {NEW_JOB_KINDS}")
    for table in NEW_TABLES:
        enable_tenant_rls(op, table)
    for table, memory_type in LINKED_TABLES.items():
        op.execute(
            f"CREATE TRIGGER trg_{table}_delete_links AFTER DELETE ON {table} "
            "REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT "
            f"EXECUTE FUNCTION engram_delete_links_of_deleted('{memory_type}')"
        )


def downgrade() -> None:
    for table in LINKED_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_delete_links ON {table}")
    op.execute(f"DELETE FROM memory_links WHERE relation NOT IN {OLD_RELATIONS} "
               f"OR source_type NOT IN {OLD_TYPES} OR target_type NOT IN {OLD_TYPES}")
    op.execute(f"DELETE FROM jobs WHERE kind NOT IN {OLD_JOB_KINDS}")
    _set_check("jobs", "kind", f"kind IN {OLD_JOB_KINDS}")
    _set_check("memory_links", "target_type", f"target_type IN {OLD_TYPES}")
    _set_check("memory_links", "source_type", f"source_type IN {OLD_TYPES}")
    _set_check("memory_links", "relation", f"relation IN {OLD_RELATIONS}")
    for table in NEW_TABLES:
        disable_tenant_rls(op, table)
    op.drop_table("agent_events")
    op.drop_table("run_feedback")
    op.drop_table("run_messages")
    op.drop_table("runs")
