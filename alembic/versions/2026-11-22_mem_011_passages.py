"""mem_011 passages: embedded windows of long memories, and turns read in their context.

The model reads 256 tokens, so a memory longer than one window also gets `passages` of kind
`window`: each window [start_char, end_char) of its content with its own vector, searched
through its own HNSW index. An episode of a session also gets one passage of kind `context`:
the turn read after the turns stored before it in its session. Exactly one owner column is
set; deleting the memory deletes its passages.

Existing long memories and episodes of sessions get passages from `engram reembed`: their
embedding_version_id is cleared here, which marks them stale (their current vector keeps
serving until then).

Revision ID: mem_011
Revises: mem_010
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_011"
down_revision: str | None = "mem_010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The default `embedding_passage_chars`: content longer than this has passages.
PASSAGE_CHARS = 800


def upgrade() -> None:
    op.execute("""
        CREATE TABLE passages (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            tenant_id text NOT NULL,
            episode_id uuid REFERENCES episodes (id) ON DELETE CASCADE,
            fact_id uuid REFERENCES facts (id) ON DELETE CASCADE,
            rule_id uuid REFERENCES rules (id) ON DELETE CASCADE,
            kind text NOT NULL CHECK (kind IN ('window', 'context')),
            ordinal integer NOT NULL CHECK (ordinal >= 0),
            start_char integer NOT NULL CHECK (start_char >= 0),
            end_char integer NOT NULL CHECK (end_char > start_char),
            embedding vector(384) NOT NULL,
            embedding_version_id integer REFERENCES embedding_versions (id),
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT ck_passages_one_owner CHECK (num_nonnulls(episode_id, fact_id, rule_id) = 1)
        )
    """)
    for owner in ("episode_id", "fact_id", "rule_id"):
        op.execute(f"CREATE UNIQUE INDEX ix_passages_{owner} "
                   f"ON passages ({owner}, kind, ordinal) WHERE {owner} IS NOT NULL")
    op.execute("CREATE INDEX ix_passages_embedding_hnsw ON passages "
               "USING hnsw (embedding vector_cosine_ops)")
    for table in ("episodes", "facts", "rules"):
        in_session = " OR session_id IS NOT NULL" if table == "episodes" else ""
        op.execute(f"UPDATE {table} SET embedding_version_id = NULL "
                   f"WHERE length(content) > {PASSAGE_CHARS}{in_session}")


def downgrade() -> None:
    op.execute("DROP TABLE passages")
