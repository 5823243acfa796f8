"""mem_013 data rights: who caused each event, and events findable by memory.

- memory_events.actor_key_id: the API key whose request (or whose enqueued job) caused the
  event; NULL for the scheduler's system jobs and with authentication disabled.
- jobs.actor_key_id: the key that enqueued the job, so the job's events name it too.
- jobs.kind may be 'erasure' (the durable erasure job).
- ix_memory_events_tenant_memory: the tenant's events of one memory, for `GET /v1/events
  ?memory_id=` and for removing a deleted memory's events.

Revision ID: mem_013
Revises: mem_012
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

from app.postgres.migrations import create_index_concurrently

revision: str = "mem_013"
down_revision: str | None = "mem_012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KINDS = ("consolidation", "decay", "cleanup")


def upgrade() -> None:
    # Each step may run again: an interrupted index build below leaves them committed.
    op.execute("ALTER TABLE memory_events ADD COLUMN IF NOT EXISTS actor_key_id uuid")
    op.execute("ALTER TABLE jobs ADD COLUMN IF NOT EXISTS actor_key_id uuid")
    op.execute("ALTER TABLE jobs DROP CONSTRAINT IF EXISTS ck_jobs_kind")
    op.execute("ALTER TABLE jobs ADD CONSTRAINT ck_jobs_kind "
               f"CHECK (kind IN {(*KINDS, 'erasure')})")
    create_index_concurrently("ix_memory_events_tenant_memory",
                              "ON memory_events (tenant_id, (payload ->> 'memory_id'))")


def downgrade() -> None:
    # Erasure jobs cannot exist below this revision; their receipts go with them.
    op.execute("DELETE FROM jobs WHERE kind = 'erasure'")
    op.execute("ALTER TABLE jobs DROP CONSTRAINT ck_jobs_kind")
    op.execute(f"ALTER TABLE jobs ADD CONSTRAINT ck_jobs_kind CHECK (kind IN {KINDS})")
    op.execute("DROP INDEX IF EXISTS ix_memory_events_tenant_memory")
    op.drop_column("jobs", "actor_key_id")
    op.drop_column("memory_events", "actor_key_id")
