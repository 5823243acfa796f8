"""mem_023 fact time: when each fact held in the world, and when Engram believed it.

- facts.valid_from / valid_until: the fact's valid time (until NULL: open-ended).
- facts.recorded_until: when Engram stopped believing the version (retracted, expired,
  replaced by a correction of the same period); its record time starts at created_at.
- fact_periods: the valid period each version was believed to have, and from when until when
  it was believed so; a version arriving late narrows its predecessor's period, and the
  period it replaces stays here, closed at that moment.

Existing facts: valid_from is the earliest occurred_at of the episodes they came from
(source_episode_id or `derived_from` links), else created_at; a superseded version holds
until its successor's valid_from; a retracted or expired one stopped being believed at the
event that says so. Ranges are indexed with GiST (btree_gist puts tenant_id in the index).

Revision ID: mem_023
Revises: mem_022
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID

from alembic import op
from app.core.rls import disable_tenant_rls, enable_tenant_rls

revision: str = "mem_023"
down_revision: str | None = "mem_022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
    op.add_column("facts", sa.Column("valid_from", sa.DateTime(timezone=True), nullable=True,
                                     server_default=sa.text("now()")))
    op.add_column("facts", sa.Column("valid_until", sa.DateTime(timezone=True)))
    op.add_column("facts", sa.Column("recorded_until", sa.DateTime(timezone=True)))
    op.execute("SELECT set_config('engram.system', 'on', true)")
    op.execute("""
        UPDATE facts f SET valid_from = COALESCE(src.occurred, f.created_at)
        FROM (SELECT f2.id, (SELECT min(e.occurred_at) FROM episodes e
                              WHERE e.id = f2.source_episode_id
                                 OR e.id IN (SELECT l.target_id FROM memory_links l
                                             WHERE l.source_type = 'fact'
                                               AND l.source_id = f2.id
                                               AND l.target_type = 'episode'
                                               AND l.relation = 'derived_from')) AS occurred
              FROM facts f2) src
        WHERE src.id = f.id""")
    op.execute("""
        UPDATE facts f SET valid_until = GREATEST(nxt.valid_from, f.valid_from)
        FROM facts nxt
        WHERE nxt.supersedes_id = f.id AND f.validity <> 'active'""")
    op.execute("""
        UPDATE facts f SET recorded_until = COALESCE(
            (SELECT min(ev.created_at) FROM memory_events ev
             WHERE ev.payload ->> 'memory_id' = f.id::text
               AND ev.event_type IN ('fact_forgotten', 'fact_expired')), now())
        WHERE f.validity IN ('retracted', 'expired')""")
    op.alter_column("facts", "valid_from", nullable=False)
    op.create_check_constraint(op.f("ck_facts_valid_period"), "facts",
                               "valid_until IS NULL OR valid_until >= valid_from")
    op.execute("CREATE INDEX ix_facts_valid_time ON facts USING gist "
               "(tenant_id, tstzrange(valid_from, valid_until)) WHERE recorded_until IS NULL")
    op.execute("CREATE INDEX ix_facts_record_time ON facts USING gist "
               "(tenant_id, tstzrange(created_at, recorded_until))")

    op.create_table(
        "fact_periods",
        sa.Column("id", UUID(as_uuid=True), primary_key=True,
                  server_default=sa.text("gen_random_uuid()")),
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("fact_id", UUID(as_uuid=True),
                  sa.ForeignKey("facts.id", ondelete="CASCADE", onupdate="CASCADE"),
                  nullable=False),
        sa.Column("valid_from", sa.DateTime(timezone=True), nullable=False),
        sa.Column("valid_until", sa.DateTime(timezone=True)),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.text("now()")),
        sa.Column("recorded_until", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_fact_periods_fact", "fact_periods", ["fact_id"])
    op.execute("CREATE INDEX ix_fact_periods_time ON fact_periods USING gist "
               "(tenant_id, tstzrange(recorded_at, recorded_until), "
               "tstzrange(valid_from, valid_until))")
    # Before its successor was stored, a superseded version was believed open-ended.
    op.execute("""
        INSERT INTO fact_periods (tenant_id, fact_id, valid_from, valid_until, recorded_at,
                                  recorded_until)
        SELECT f.tenant_id, f.id, f.valid_from, NULL, f.created_at, nxt.created_at
        FROM facts f JOIN facts nxt ON nxt.supersedes_id = f.id
        WHERE f.valid_until IS NOT NULL AND nxt.created_at > f.created_at""")
    op.execute("""
        INSERT INTO fact_periods (tenant_id, fact_id, valid_from, valid_until, recorded_at)
        SELECT f.tenant_id, f.id, f.valid_from, f.valid_until,
               COALESCE((SELECT max(p.recorded_until) FROM fact_periods p
                         WHERE p.fact_id = f.id), f.created_at)
        FROM facts f""")
    enable_tenant_rls(op, "fact_periods")


def downgrade() -> None:
    disable_tenant_rls(op, "fact_periods")
    op.drop_table("fact_periods")
    op.execute("DROP INDEX ix_facts_record_time")
    op.execute("DROP INDEX ix_facts_valid_time")
    op.drop_constraint(op.f("ck_facts_valid_period"), "facts", type_="check")
    op.drop_column("facts", "recorded_until")
    op.drop_column("facts", "valid_until")
    op.drop_column("facts", "valid_from")
