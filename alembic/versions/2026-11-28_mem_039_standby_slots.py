"""mem_039 standby slots: on a hot standby, `embedding_slots()` also locks the tables with
vectors (ACCESS SHARE) before it reads which model fills which column.

The advisory lock the function takes keeps the primary's swap of the vector columns away
from a transaction that read the slots, but a standby replays the swap in its recovery,
which takes no advisory lock. Replaying the swap's ALTER TABLEs needs ACCESS EXCLUSIVE on
those tables, so with the tables locked first the replay waits for the transaction to end
(or has already committed, and the read sees the switched state). On the primary the tables
are not locked here: a statement that locks them before the advisory lock would deadlock
with the swap, which takes the advisory lock first.

Revision ID: mem_039
Revises: mem_038
Create Date: 2026-11-28
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_039"
down_revision: str | None = "mem_038"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("episodes", "facts", "rules", "passages", "runs", "run_messages", "procedures",
          "arcs", "agent_events")
# pg_advisory_xact_lock key of the switch ("swap").
SWITCH_LOCK = 0x73776170


def _function(on_standby: str) -> str:
    return f"""
        CREATE OR REPLACE FUNCTION embedding_slots(
            OUT serving_version_id integer, OUT next_version_id integer, OUT building boolean)
        LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            {on_standby}
            PERFORM pg_advisory_xact_lock_shared({SWITCH_LOCK});
            SELECT s.serving_version_id, s.next_version_id, s.state = 'building'
              INTO serving_version_id, next_version_id, building
              FROM embedding_switches s;
        END $$"""


def upgrade() -> None:
    op.execute(_function(f"""IF pg_is_in_recovery() THEN
                LOCK TABLE {", ".join(TABLES)} IN ACCESS SHARE MODE;
            END IF;"""))


def downgrade() -> None:
    op.execute(_function(""))
