"""mem_038 model switch: a second vector slot in every table with vectors, the switch's
state, and the function each embedding transaction reads it through.

`engram reembed --model` fills `embedding_next` with a new model's vectors while searches
use `embedding`, then swaps the two columns (their names) in one transaction. Until the
previous vectors are dropped, they stay in `embedding_next`.

`embedding_slots()` takes a shared advisory lock before it reads the state, each statement
of a volatile function seeing what was committed before it: a transaction that read the
state holds the lock to its end, so the swap (which takes the lock exclusively) happens
wholly before or wholly after it.

Revision ID: mem_038
Revises: mem_037
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_038"
down_revision: str | None = "mem_037"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("episodes", "facts", "rules", "passages", "runs", "run_messages", "procedures",
          "arcs", "agent_events")
# pg_advisory_xact_lock key of the switch ("swap").
SWITCH_LOCK = 0x73776170


def upgrade() -> None:
    for table in TABLES:
        op.execute(f"""
            DO $$
            BEGIN
                EXECUTE format('ALTER TABLE {table} ADD COLUMN embedding_next %s',
                    (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
                      WHERE a.attrelid = '{table}'::regclass AND a.attname = 'embedding'));
            END $$""")
        op.execute(f"ALTER TABLE {table} ADD COLUMN embedding_next_version_id integer "
                   f"REFERENCES embedding_versions (id)")
    # After a swap, the column named `embedding` is the one that was `embedding_next`.
    op.execute("ALTER TABLE passages ALTER COLUMN embedding DROP NOT NULL")
    op.execute("""
        CREATE TABLE embedding_switches (
            id integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
            serving_version_id integer NOT NULL REFERENCES embedding_versions (id),
            next_version_id integer REFERENCES embedding_versions (id),
            state text NOT NULL CHECK (state IN ('building', 'switched')),
            started_at timestamptz NOT NULL DEFAULT now(),
            switched_at timestamptz
        )""")
    op.execute(f"""
        CREATE FUNCTION embedding_slots(
            OUT serving_version_id integer, OUT next_version_id integer, OUT building boolean)
        LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared({SWITCH_LOCK});
            SELECT s.serving_version_id, s.next_version_id, s.state = 'building'
              INTO serving_version_id, next_version_id, building
              FROM embedding_switches s;
        END $$""")


def downgrade() -> None:
    op.execute("DROP FUNCTION embedding_slots()")
    op.execute("DROP TABLE embedding_switches")
    op.execute("ALTER TABLE passages ALTER COLUMN embedding SET NOT NULL")
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} DROP COLUMN embedding_next_version_id, "
                   f"DROP COLUMN embedding_next")
