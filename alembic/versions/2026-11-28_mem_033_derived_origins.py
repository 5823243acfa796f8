"""mem_033 derived origins: what a fact, rule or procedure was learned from outlives it.

`origins` (text[]) on facts, rules and procedures names where a memory was learned from, as
the erasure selectors name them: `butler:<butler>` and `session:<session id>` (or
`session:<inferred session>`) of each episode it derives from, `run:<id>` and
`task:<task id>` of each run. Triggers keep it in the writer's transaction:
- a `derived_from` link from a fact, rule or procedure to an episode or run adds the
  episode's or run's origins;
- a fact or rule stored (or changed) with a `source_episode_id` adds that episode's;
- an episode given another butler or session adds the new ones to what derives from it.
Values are only added: cleanup deleting an episode or run takes nothing away, so an erasure
finds what was learned from a session, butler or run after its episodes are gone.
The existing `derived_from` links, source episodes and lesson rules fill it on upgrade.

`ix_memory_events_link_ends`: events naming a memory at an end of a link (`source_id`,
`target_id`, `link_source_id`), which a deletion removes with the memory's own events.

The indexes are built with CREATE INDEX CONCURRENTLY, outside the revision's transaction.

Revision ID: mem_033
Revises: mem_032
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.postgres.migrations import create_index_concurrently

revision: str = "mem_033"
down_revision: str | None = "mem_032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("facts", "rules", "procedures")
SOURCED = ("facts", "rules")
LINK_ENDS = ("ARRAY[payload ->> 'source_id', payload ->> 'target_id', "
             "payload ->> 'link_source_id']")
LINK_KEYS = "payload ?| ARRAY['source_id', 'target_id', 'link_source_id']"

FUNCTIONS = [
    # An episode's origins; NULL parts drop out.
    """
    CREATE FUNCTION engram_episode_origins(butler text, session_id text, inferred uuid)
    RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
        SELECT array_remove(ARRAY['butler:' || butler, 'session:' || session_id,
                                  'session:' || inferred::text], NULL)
    $$
    """,
    """
    CREATE FUNCTION engram_run_origins(run_id uuid, task_id text)
    RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
        SELECT array_remove(ARRAY['run:' || run_id::text, 'task:' || task_id], NULL)
    $$
    """,
    """
    CREATE FUNCTION engram_merge_origins(kept text[], added text[])
    RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
        SELECT coalesce(array_agg(DISTINCT o ORDER BY o), '{}')
        FROM unnest(kept || coalesce(added, '{}')) AS o
    $$
    """,
    # Provenance is kept whoever wrote the link: a key limited to butlers included.
    """
    CREATE FUNCTION engram_add_origins(tenant text, kind text, row_id uuid, added text[])
    RETURNS void LANGUAGE plpgsql SET engram.butlers = '' AS $$
    BEGIN
        IF added IS NULL OR cardinality(added) = 0 THEN
            RETURN;
        ELSIF kind = 'fact' THEN
            UPDATE facts SET origins = engram_merge_origins(origins, added)
            WHERE tenant_id = tenant AND id = row_id AND NOT origins @> added;
        ELSIF kind = 'rule' THEN
            UPDATE rules SET origins = engram_merge_origins(origins, added)
            WHERE tenant_id = tenant AND id = row_id AND NOT origins @> added;
        ELSIF kind = 'procedure' THEN
            UPDATE procedures SET origins = engram_merge_origins(origins, added)
            WHERE tenant_id = tenant AND id = row_id AND NOT origins @> added;
        END IF;
    END $$
    """,
    """
    CREATE FUNCTION engram_link_origins() RETURNS trigger
    LANGUAGE plpgsql SET engram.butlers = '' AS $$
    BEGIN
        IF NEW.target_type = 'episode' THEN
            PERFORM engram_add_origins(NEW.tenant_id, NEW.source_type, NEW.source_id, (
                SELECT engram_episode_origins(e.butler, e.session_id, e.inferred_session)
                FROM episodes e WHERE e.tenant_id = NEW.tenant_id AND e.id = NEW.target_id));
        ELSE
            PERFORM engram_add_origins(NEW.tenant_id, NEW.source_type, NEW.source_id, (
                SELECT engram_run_origins(u.id, u.task_id) FROM runs u
                WHERE u.tenant_id = NEW.tenant_id AND u.id = NEW.target_id));
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION engram_source_origins() RETURNS trigger
    LANGUAGE plpgsql SET engram.butlers = '' AS $$
    BEGIN
        NEW.origins := engram_merge_origins(NEW.origins, (
            SELECT engram_episode_origins(e.butler, e.session_id, e.inferred_session)
            FROM episodes e
            WHERE e.tenant_id = NEW.tenant_id AND e.id = NEW.source_episode_id));
        RETURN NEW;
    END $$
    """,
    """
    CREATE FUNCTION engram_episode_origins_moved() RETURNS trigger
    LANGUAGE plpgsql SET engram.butlers = '' AS $$
    DECLARE
        added text[] := engram_episode_origins(NEW.butler, NEW.session_id,
                                               NEW.inferred_session);
    BEGIN
        PERFORM engram_add_origins(NEW.tenant_id, l.source_type, l.source_id, added)
        FROM memory_links l
        WHERE l.target_type = 'episode' AND l.target_id = NEW.id
          AND l.relation = 'derived_from' AND l.tenant_id = NEW.tenant_id;
        PERFORM engram_add_origins(NEW.tenant_id, 'fact', f.id, added)
        FROM facts f WHERE f.source_episode_id = NEW.id AND f.tenant_id = NEW.tenant_id;
        PERFORM engram_add_origins(NEW.tenant_id, 'rule', r.id, added)
        FROM rules r WHERE r.source_episode_id = NEW.id AND r.tenant_id = NEW.tenant_id;
        RETURN NULL;
    END $$
    """,
]

TRIGGERS = [
    "CREATE TRIGGER trg_memory_links_origins AFTER INSERT ON memory_links FOR EACH ROW "
    "WHEN (NEW.relation = 'derived_from' "
    "AND NEW.source_type IN ('fact', 'rule', 'procedure') "
    "AND NEW.target_type IN ('episode', 'run')) "
    "EXECUTE FUNCTION engram_link_origins()",
    *(f"CREATE TRIGGER trg_{table}_source_origins "
      f"BEFORE INSERT OR UPDATE OF source_episode_id ON {table} FOR EACH ROW "
      "WHEN (NEW.source_episode_id IS NOT NULL) EXECUTE FUNCTION engram_source_origins()"
      for table in SOURCED),
    "CREATE TRIGGER trg_episodes_origins "
    "AFTER UPDATE OF butler, session_id, inferred_session ON episodes FOR EACH ROW "
    "WHEN (OLD.butler IS DISTINCT FROM NEW.butler "
    "OR OLD.session_id IS DISTINCT FROM NEW.session_id "
    "OR OLD.inferred_session IS DISTINCT FROM NEW.inferred_session) "
    "EXECUTE FUNCTION engram_episode_origins_moved()",
]

# (kind, table): every origin the rows already have, as (id, origin) pairs.
FOUND = """
    SELECT l.source_id AS id,
           unnest(engram_episode_origins(e.butler, e.session_id, e.inferred_session)) AS origin
    FROM memory_links l JOIN episodes e ON e.id = l.target_id AND e.tenant_id = l.tenant_id
    WHERE l.relation = 'derived_from' AND l.source_type = '{kind}'
      AND l.target_type = 'episode'
    UNION
    SELECT l.source_id, unnest(engram_run_origins(u.id, u.task_id))
    FROM memory_links l JOIN runs u ON u.id = l.target_id AND u.tenant_id = l.tenant_id
    WHERE l.relation = 'derived_from' AND l.source_type = '{kind}' AND l.target_type = 'run'
"""
SOURCE_FOUND = """
    UNION
    SELECT m.id, unnest(engram_episode_origins(e.butler, e.session_id, e.inferred_session))
    FROM {table} m JOIN episodes e ON e.id = m.source_episode_id AND e.tenant_id = m.tenant_id
"""
LESSON_FOUND = """
    UNION
    SELECT fb.lesson_rule_id, unnest(engram_run_origins(u.id, u.task_id))
    FROM run_feedback fb JOIN runs u ON u.id = fb.run_id AND u.tenant_id = fb.tenant_id
    WHERE fb.lesson_rule_id IS NOT NULL
"""


def _backfill(kind: str, table: str) -> str:
    found = FOUND.format(kind=kind)
    if table in SOURCED:
        found += SOURCE_FOUND.format(table=table)
    if table == "rules":
        found += LESSON_FOUND
    return f"""
        UPDATE {table} m SET origins = o.origins
        FROM (SELECT id, array_agg(DISTINCT origin ORDER BY origin) AS origins
              FROM ({found}) AS found GROUP BY id) AS o
        WHERE m.id = o.id"""


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("origins", postgresql.ARRAY(sa.Text()), nullable=False,
                                       server_default="{}"))
    for function in FUNCTIONS:
        op.execute(function)
    for trigger in TRIGGERS:
        op.execute(trigger)
    for kind, table in (("fact", "facts"), ("rule", "rules"), ("procedure", "procedures")):
        op.execute(_backfill(kind, table))
    for table in TABLES:
        create_index_concurrently(f"ix_{table}_origins",
                                  f"ON {table} USING gin (origins) WHERE origins <> '{{}}'")
    for table in SOURCED:
        # Also what the episodes' foreign key reads when cleanup deletes an episode.
        create_index_concurrently(f"ix_{table}_source_episode",
                                  f"ON {table} (source_episode_id) "
                                  "WHERE source_episode_id IS NOT NULL")
    create_index_concurrently("ix_memory_events_link_ends",
                              f"ON memory_events USING gin (({LINK_ENDS})) WHERE {LINK_KEYS}")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_memory_events_link_ends")
    for table in SOURCED:
        op.execute(f"DROP INDEX IF EXISTS ix_{table}_source_episode")
    op.execute("DROP TRIGGER IF EXISTS trg_episodes_origins ON episodes")
    op.execute("DROP TRIGGER IF EXISTS trg_memory_links_origins ON memory_links")
    for table in SOURCED:
        op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_source_origins ON {table}")
    for name in ("engram_episode_origins_moved()", "engram_source_origins()",
                 "engram_link_origins()", "engram_add_origins(text, text, uuid, text[])",
                 "engram_merge_origins(text[], text[])", "engram_run_origins(uuid, text)",
                 "engram_episode_origins(text, text, uuid)"):
        op.execute(f"DROP FUNCTION IF EXISTS {name}")
    for table in TABLES:
        op.execute(f"DROP INDEX IF EXISTS ix_{table}_origins")
        op.drop_column(table, "origins")
