"""mem_017 string session ids: `session_id` is any string up to 200 characters.

Agent frameworks name sessions with their own ids (thread ids, "chat-42"), not only UUIDs.
`episodes.session_id` goes from uuid to varchar(200) (existing UUIDs become their text form)
and `working_memories.session_id` from text to varchar(200) (the API already bounded it).

The downgrade turns episodes' session ids back into UUIDs; it refuses, naming the count, while
any episode holds a session id that is not a UUID (erase or rename those sessions first).

Revision ID: mem_017
Revises: mem_019 (assigned mem_016; chained after main's head)
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "mem_017"
down_revision: str | None = "mem_019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UUID_PATTERN = "^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"


def upgrade() -> None:
    op.execute("ALTER TABLE episodes ALTER COLUMN session_id TYPE varchar(200) "
               "USING session_id::text")
    op.execute("ALTER TABLE working_memories ALTER COLUMN session_id TYPE varchar(200)")


def downgrade() -> None:
    # Row-level security would hide other tenants' rows from the count; migrations run with
    # the system setting on (app/postgres/migrations.py), which every policy admits.
    not_uuids = op.get_bind().execute(sa.text(
        "SELECT count(*) FROM episodes WHERE session_id IS NOT NULL "
        "AND session_id !~ :pattern"), {"pattern": UUID_PATTERN}).scalar_one()
    if not_uuids:
        raise RuntimeError(
            f"cannot downgrade mem_017: {not_uuids} episode(s) have a session_id that is not a "
            "UUID; erase those sessions (POST /v1/erasures) or rewrite their ids first")
    op.execute("ALTER TABLE episodes ALTER COLUMN session_id TYPE uuid USING session_id::uuid")
    op.execute("ALTER TABLE working_memories ALTER COLUMN session_id TYPE text")
