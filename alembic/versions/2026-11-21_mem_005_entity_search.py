"""mem_005 entity search indexes (trigram) for resolve; links cascade with their memories.

* `engram_lower_aliases(text[])`: the aliases lower-cased, GIN-indexed for the exact alias tier.
* `entities.alias_search`: the aliases lower-cased and joined (a stored generated column made by
  the IMMUTABLE wrapper `engram_aliases_text(text[])`, as array_to_string is only STABLE),
  trigram-indexed with `lower(canonical_name)` for the substring and fuzzy tiers. Stored rather
  than an expression index so that scans which cannot use an index (names under 3 characters)
  do not call the SQL function on every row.
* `(tenant_id, lower(canonical_name))`: the exact tier, and substring matches in name order;
  `(tenant_id, created_at DESC, id DESC)`: the entity listing's keyset pagination.
* The trigram indexes are created only where pg_trgm is installed; resolve checks pg_extension at
  query time and falls back to plain LIKE scans (and an empty fuzzy tier) without it.
* memory_links has no foreign keys (its ends are polymorphic), so a statement-level AFTER DELETE
  trigger on episodes, facts and rules deletes the links touching deleted rows.

Revision ID: mem_005
Revises: mem_004
Create Date: 2026-11-21
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_005"
down_revision: str | None = "mem_004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MEMORY_TABLES = {"episodes": "episode", "facts": "fact", "rules": "rule"}


def upgrade() -> None:
    op.execute("""
        CREATE FUNCTION engram_lower_aliases(aliases text[]) RETURNS text[]
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT coalesce(array_agg(lower(alias)), '{}'::text[]) FROM unnest(aliases) AS alias
        $$
    """)
    op.execute("""
        CREATE FUNCTION engram_aliases_text(aliases text[]) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT lower(array_to_string(aliases, chr(31)))
        $$
    """)
    op.execute("ALTER TABLE entities ADD COLUMN alias_search text NOT NULL "
               "GENERATED ALWAYS AS (engram_aliases_text(aliases)) STORED")
    op.execute("CREATE INDEX ix_entities_lower_aliases ON entities "
               "USING gin (engram_lower_aliases(aliases))")
    op.execute("CREATE INDEX ix_entities_tenant_lower_name ON entities "
               "(tenant_id, lower(canonical_name))")
    op.execute("CREATE INDEX ix_entities_tenant_created ON entities "
               "(tenant_id, created_at DESC, id DESC)")
    op.execute("""
        DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
            CREATE INDEX ix_entities_name_trgm ON entities
                USING gin (lower(canonical_name) gin_trgm_ops);
            CREATE INDEX ix_entities_aliases_trgm ON entities
                USING gin (alias_search gin_trgm_ops);
        END IF;
        END $$
    """)

    op.execute("""
        CREATE FUNCTION engram_delete_links_of_deleted() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM memory_links
            WHERE source_type = TG_ARGV[0] AND source_id IN (SELECT id FROM deleted_rows);
            DELETE FROM memory_links
            WHERE target_type = TG_ARGV[0] AND target_id IN (SELECT id FROM deleted_rows);
            RETURN NULL;
        END
        $$
    """)
    for table, memory_type in MEMORY_TABLES.items():
        op.execute(
            f"CREATE TRIGGER trg_{table}_delete_links AFTER DELETE ON {table} "
            "REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT "
            f"EXECUTE FUNCTION engram_delete_links_of_deleted('{memory_type}')"
        )


def downgrade() -> None:
    for table in MEMORY_TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS trg_{table}_delete_links ON {table}")
    op.execute("DROP FUNCTION IF EXISTS engram_delete_links_of_deleted()")
    op.execute("DROP INDEX IF EXISTS ix_entities_aliases_trgm")
    op.execute("DROP INDEX IF EXISTS ix_entities_name_trgm")
    op.execute("DROP INDEX IF EXISTS ix_entities_tenant_created")
    op.execute("DROP INDEX IF EXISTS ix_entities_tenant_lower_name")
    op.execute("DROP INDEX IF EXISTS ix_entities_lower_aliases")
    op.execute("ALTER TABLE entities DROP COLUMN IF EXISTS alias_search")
    op.execute("DROP FUNCTION IF EXISTS engram_aliases_text(text[])")
    op.execute("DROP FUNCTION IF EXISTS engram_lower_aliases(text[])")
