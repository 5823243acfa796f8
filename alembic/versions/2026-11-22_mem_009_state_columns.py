"""mem_009 state columns: lifecycle state out of client-writable metadata; normalised fact keys.

- rules: forgotten_at, needs_inversion, original_content, fading_since;
- facts: fading_since, subject_key and predicate_key (the supersession key, case-folded);
- entities: merged_into_id;
- episodes: forgotten_at (filled from the episode_forgotten events), so cleanup can tell an
  explicitly forgotten episode from one whose TTL ran out before it was consolidated;
- workers: job worker processes and their heartbeats, so a restarted process reclaims the
  jobs of a dead one at once instead of after the lease;
- jobs.progress: counts committed so far, across attempts.
The values the service kept in metadata move into the columns and the keys leave metadata
(harmful_reasons were always in rule_applications too). Active facts whose keys become equal
once case-folded ("Alice" and "alice") keep the newest active; the others are superseded.

Revision ID: mem_009
Revises: mem_008
Create Date: 2026-11-22
"""

import re
import unicodedata
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB, UUID

revision: str = "mem_009"
down_revision: str | None = "mem_008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RULE_KEYS = ("forgotten", "needs_inversion", "status", "harmful_reasons", "original_content")
BATCH = 5000
_WHITESPACE = re.compile(r"\s+")


def _normalise_key(text: str) -> str:
    """A frozen copy of app/text.normalise_key at this revision."""
    normalised = unicodedata.normalize("NFKC", text)
    visible = "".join(c for c in normalised
                      if c.isspace() or unicodedata.category(c) not in ("Cf", "Cc"))
    return _WHITESPACE.sub(" ", visible.casefold()).strip()


def _fill_fact_keys() -> None:
    conn = op.get_bind()
    last = None
    while True:
        rows = conn.execute(sa.text(
            "SELECT id, subject, predicate FROM facts "
            "WHERE CAST(:last AS uuid) IS NULL OR id > CAST(:last AS uuid) "
            "ORDER BY id LIMIT :batch"), {"last": last, "batch": BATCH}).all()
        if not rows:
            return
        conn.execute(sa.text("""
            UPDATE facts f SET subject_key = v.subject_key, predicate_key = v.predicate_key
            FROM (SELECT unnest(CAST(:ids AS uuid[])) AS id,
                         unnest(CAST(:subjects AS text[])) AS subject_key,
                         unnest(CAST(:predicates AS text[])) AS predicate_key) v
            WHERE f.id = v.id"""), {
            "ids": [str(row.id) for row in rows],
            "subjects": [_normalise_key(row.subject) for row in rows],
            "predicates": [_normalise_key(row.predicate) for row in rows],
        })
        last = str(rows[-1].id)


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("hostname", sa.Text(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False,
                  server_default=sa.func.now()),
    )
    op.add_column("rules", sa.Column("fading_since", sa.DateTime(timezone=True)))
    op.add_column("rules", sa.Column("forgotten_at", sa.DateTime(timezone=True)))
    op.add_column("rules", sa.Column("needs_inversion", sa.Boolean(), nullable=False,
                                     server_default=sa.false()))
    op.add_column("rules", sa.Column("original_content", sa.Text()))
    op.add_column("facts", sa.Column("fading_since", sa.DateTime(timezone=True)))
    op.add_column("facts", sa.Column("subject_key", sa.Text()))
    op.add_column("facts", sa.Column("predicate_key", sa.Text()))
    op.add_column("entities", sa.Column("merged_into_id", UUID(as_uuid=True)))
    op.add_column("episodes", sa.Column("forgotten_at", sa.DateTime(timezone=True)))
    op.add_column("jobs", sa.Column("progress", JSONB(), nullable=False,
                                    server_default=sa.text("'{}'::jsonb")))
    op.execute("""
        UPDATE episodes e SET forgotten_at = ev.forgotten_at
        FROM (SELECT payload ->> 'memory_id' AS memory_id, min(created_at) AS forgotten_at
              FROM memory_events WHERE event_type = 'episode_forgotten'
              GROUP BY 1) ev
        WHERE ev.memory_id = e.id::text
    """)
    op.create_foreign_key("fk_entities_merged_into_id_entities", "entities", "entities",
                          ["merged_into_id"], ["id"], ondelete="RESTRICT")

    # Rules: only what the service itself wrote becomes state. A needs_inversion flag counts
    # only where the counters earned it (3 harmful marks, effectiveness under 0.3), and
    # original_content only on an inverted rule.
    op.execute("""
        UPDATE rules SET
            forgotten_at = CASE WHEN metadata -> 'forgotten' = 'true'::jsonb
                                THEN COALESCE(last_evaluated_at, now()) END,
            fading_since = CASE WHEN metadata ->> 'status' = 'fading' THEN now() END,
            needs_inversion = (metadata -> 'needs_inversion' = 'true'::jsonb
                               AND harmful_count >= 3 AND effectiveness_score < 0.3),
            original_content = CASE WHEN maturity = 'anti_pattern'
                                    THEN metadata ->> 'original_content' END,
            metadata = metadata - CAST(:keys AS text[])
        WHERE metadata ?| CAST(:keys AS text[])
    """.replace(":keys", "'{" + ",".join(RULE_KEYS) + "}'"))
    op.execute("""
        UPDATE facts SET fading_since = now(), metadata = metadata - 'status'
        WHERE metadata ->> 'status' = 'fading'
    """)
    op.execute("""
        UPDATE entities e SET merged_into_id = target.id, metadata = e.metadata - 'merged_into'
        FROM entities target
        WHERE e.metadata ->> 'merged_into' ~* '^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$'
          AND target.id = CAST(e.metadata ->> 'merged_into' AS uuid)
          AND target.tenant_id = e.tenant_id
    """)

    _fill_fact_keys()
    op.alter_column("facts", "subject_key", nullable=False)
    op.alter_column("facts", "predicate_key", nullable=False)
    # Keys that differed only by case or spacing: the newest active fact keeps the key.
    op.execute("""
        UPDATE facts f SET validity = 'superseded'
        FROM (SELECT id, row_number() OVER (
                  PARTITION BY tenant_id, scope, COALESCE(entity_id::text, subject_key),
                               predicate_key
                  ORDER BY created_at DESC, id DESC) AS n
              FROM facts WHERE validity = 'active') ranked
        WHERE f.id = ranked.id AND ranked.n > 1
    """)
    op.drop_index("uq_facts_scope_subject_predicate_active", table_name="facts")
    op.drop_index("uq_facts_entity_scope_predicate_active", table_name="facts")
    op.create_index("uq_facts_entity_scope_predicate_active", "facts",
                    ["tenant_id", "entity_id", "scope", "predicate_key"], unique=True,
                    postgresql_where=sa.text("entity_id IS NOT NULL AND validity = 'active'"))
    op.create_index("uq_facts_scope_subject_predicate_active", "facts",
                    ["tenant_id", "scope", "subject_key", "predicate_key"], unique=True,
                    postgresql_where=sa.text("entity_id IS NULL AND validity = 'active'"))
    op.create_index("ix_facts_subject_predicate_key", "facts",
                    ["tenant_id", "subject_key", "predicate_key"])
    op.create_index("ix_rules_tenant_live", "rules", ["tenant_id"],
                    postgresql_where=sa.text("forgotten_at IS NULL"))


def downgrade() -> None:
    op.drop_index("ix_rules_tenant_live", table_name="rules")
    op.drop_index("ix_facts_subject_predicate_key", table_name="facts")
    op.drop_index("uq_facts_scope_subject_predicate_active", table_name="facts")
    op.drop_index("uq_facts_entity_scope_predicate_active", table_name="facts")
    # The old key compared subjects as written; facts made distinct by case stay as they are.
    op.create_index("uq_facts_entity_scope_predicate_active", "facts",
                    ["tenant_id", "entity_id", "scope", "predicate"], unique=True,
                    postgresql_where=sa.text("entity_id IS NOT NULL AND validity = 'active'"))
    op.create_index("uq_facts_scope_subject_predicate_active", "facts",
                    ["tenant_id", "scope", "subject", "predicate"], unique=True,
                    postgresql_where=sa.text("entity_id IS NULL AND validity = 'active'"))

    op.execute("""
        UPDATE entities SET metadata = metadata || jsonb_build_object('merged_into',
                                                                      merged_into_id::text)
        WHERE merged_into_id IS NOT NULL
    """)
    op.execute("""
        UPDATE facts SET metadata = metadata || '{"status": "fading"}'::jsonb
        WHERE fading_since IS NOT NULL
    """)
    op.execute("""
        UPDATE rules r SET metadata = r.metadata
            || CASE WHEN r.forgotten_at IS NOT NULL THEN '{"forgotten": true}'::jsonb
                    ELSE '{}'::jsonb END
            || CASE WHEN r.fading_since IS NOT NULL THEN '{"status": "fading"}'::jsonb
                    ELSE '{}'::jsonb END
            || CASE WHEN r.needs_inversion THEN '{"needs_inversion": true}'::jsonb
                    ELSE '{}'::jsonb END
            || CASE WHEN r.original_content IS NOT NULL
                    THEN jsonb_build_object('original_content', r.original_content)
                    ELSE '{}'::jsonb END
            || COALESCE((SELECT jsonb_build_object('harmful_reasons',
                                                   jsonb_agg(a.reason ORDER BY a.created_at))
                         FROM rule_applications a
                         WHERE a.rule_id = r.id AND a.outcome = 'harmful'
                           AND a.reason IS NOT NULL AND a.reason <> ''
                         HAVING count(*) > 0), '{}'::jsonb)
    """)
    op.drop_column("jobs", "progress")
    op.drop_column("episodes", "forgotten_at")
    op.drop_constraint("fk_entities_merged_into_id_entities", "entities", type_="foreignkey")
    op.drop_column("entities", "merged_into_id")
    op.drop_column("facts", "predicate_key")
    op.drop_column("facts", "subject_key")
    op.drop_column("facts", "fading_since")
    op.drop_column("rules", "original_content")
    op.drop_column("rules", "needs_inversion")
    op.drop_column("rules", "forgotten_at")
    op.drop_column("rules", "fading_since")
    op.drop_table("workers")
