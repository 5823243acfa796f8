"""mem_043 keyword counts by tenant: a batch's keyword counts read its episodes by tenant and id.

`engram_keyword_count_episodes(ids)` (mem_030) found the batch's episodes by id alone. On a
store distributed by tenant (Citus) that query runs on every shard; with the tenant named,
`engram_keyword_count_episodes(tenant, ids)` reads one. On one node the counts are the same.

Revision ID: mem_043
Revises: mem_042
Create Date: 2026-11-29
"""

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "mem_043"
down_revision: str | None = "mem_042"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTED = ("(SELECT tenant_id, id, butler AS scope, search_vector FROM episodes "
           "WHERE tenant_id = tenant AND id = ANY(ids) AND search_vector IS NOT NULL)")


def _revision(name: str) -> ModuleType:
    """An earlier revision module, whose SQL builders this one reuses."""
    [path] = Path(__file__).parent.glob(f"*_{name}_*.py")
    spec = importlib.util.spec_from_file_location(f"engram_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    counts = _revision("mem_030")._counts(COUNTED)
    op.execute(f"""
        CREATE FUNCTION engram_keyword_count_episodes(tenant text, ids uuid[]) RETURNS void
        LANGUAGE plpgsql AS $$ BEGIN {counts} END $$
    """)
    op.execute("DROP FUNCTION engram_keyword_count_episodes(uuid[])")


def downgrade() -> None:
    mem_030 = _revision("mem_030")
    op.execute(f"""
        CREATE FUNCTION engram_keyword_count_episodes(ids uuid[]) RETURNS void
        LANGUAGE plpgsql AS $$ BEGIN {mem_030._counts(mem_030.COUNTED)} END $$
    """)
    op.execute("DROP FUNCTION engram_keyword_count_episodes(text, uuid[])")
