"""mem_028 graph links: several relations a pair, who and why, counted contradictions, mentions.

* `memory_links` is keyed by (source, target, relation, tenant): two memories may be joined by
  `supports` and `contradicts` at once. Each link gains an `id` (the listing's total order),
  `reasoning` (why it was made) and `created_by` (who made it). Procedures and arcs may be
  either end; deleting an arc deletes its links as deleting a procedure does.
* `facts` gains `validation_count` (confirmations and `supports` links) and
  `contradiction_count` (`contradicts` links and contradict calls).
* `engram_name_key(text)`: lower case, every run of characters that are not letters or digits
  one space, trimmed; `engram_entity_keys(name, aliases)` the keys of an entity's name and
  aliases, `engram_entity_heads(name, aliases)` their first words (the expression written
  out: an index build resolves functions with an empty search_path). A GIN index of the first
  words (live entities, `fastupdate` off: entities are written seldom and read on every
  store, and a pending list is scanned whole on each read) gives the entities a stored
  memory may name from its words; its word n-grams then tell which it does.

Revision ID: mem_028
Revises: mem_030
Create Date: 2026-11-26
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_028"
down_revision: str | None = "mem_030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_TYPES = ("episode", "fact", "rule", "run", "run_message", "run_feedback", "agent_event",
             "entity")
OLD_SOURCES = (*OLD_TYPES, "procedure")
NEW_TYPES = (*OLD_TYPES, "procedure", "arc")
NAME_FUNCTIONS = ("engram_entity_heads(text, text[])",)
# The alias lookup's `&&` (overlap); mem_012 marked `@>` (contains) already.
OVERLAP = "pg_catalog.arrayoverlap(anyarray, anyarray)"


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


def _set_check(name: str, condition: str) -> None:
    op.execute(f"ALTER TABLE memory_links DROP CONSTRAINT ck_memory_links_{name}")
    op.execute(f"ALTER TABLE memory_links ADD CONSTRAINT ck_memory_links_{name} "
               f"CHECK ({condition})")


def _set_key(*columns: str) -> None:
    op.execute("ALTER TABLE memory_links DROP CONSTRAINT pk_memory_links")
    op.execute("ALTER TABLE memory_links ADD CONSTRAINT pk_memory_links PRIMARY KEY "
               f"({', '.join(columns)})")


def upgrade() -> None:
    _set_key("source_type", "source_id", "target_type", "target_id", "relation", "tenant_id")
    op.execute("ALTER TABLE memory_links ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid()")
    op.execute("ALTER TABLE memory_links ADD COLUMN reasoning text")
    op.execute("ALTER TABLE memory_links ADD COLUMN created_by text")
    op.execute("CREATE UNIQUE INDEX ux_memory_links_id ON memory_links (id)")
    _set_check("source_type", f"source_type IN {_in(NEW_TYPES)}")
    _set_check("target_type", f"target_type IN {_in(NEW_TYPES)}")
    op.execute("CREATE TRIGGER trg_arcs_delete_links AFTER DELETE ON arcs "
               "REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT "
               "EXECUTE FUNCTION engram_delete_links_of_deleted('arc')")

    op.execute("ALTER TABLE facts ADD COLUMN validation_count integer NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE facts ADD COLUMN contradiction_count integer NOT NULL DEFAULT 0")

    op.execute("""
        CREATE FUNCTION engram_name_key(name text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT btrim(regexp_replace(lower(name), '[^[:alnum:]]+', ' ', 'g'))
        $$
    """)
    op.execute("""
        CREATE FUNCTION engram_entity_keys(name text, aliases text[]) RETURNS text[]
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT array_agg(btrim(regexp_replace(lower(one), '[^[:alnum:]]+', ' ', 'g')))
            FROM unnest(array_prepend(name, aliases)) AS one
        $$
    """)
    op.execute("""
        CREATE FUNCTION engram_entity_heads(name text, aliases text[]) RETURNS text[]
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
            SELECT array_agg(split_part(
                btrim(regexp_replace(lower(one), '[^[:alnum:]]+', ' ', 'g')), ' ', 1))
            FROM unnest(array_prepend(name, aliases)) AS one
        $$
    """)
    op.execute("CREATE INDEX ix_entities_name_heads ON entities "
               "USING gin (engram_entity_heads(canonical_name, aliases)) "
               "WITH (fastupdate = off) WHERE merged_into_id IS NULL")
    # As mem_012 does for the entity lookups: under row-level security an index is used for a
    # condition only when its functions are LEAKPROOF, which only a superuser may declare
    # (an inlined function is judged by the functions it inlines to, so the key function
    # of the index is a set-returning aggregate PostgreSQL does not inline).
    _mark_leakproof((*NAME_FUNCTIONS, OVERLAP), "LEAKPROOF")


def _mark_leakproof(names: Sequence[str], marker: str) -> None:
    functions = ", ".join(f"'{name}'" for name in names)
    op.execute(f"""
        DO $$
        DECLARE signature text;
        BEGIN
        IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            FOREACH signature IN ARRAY ARRAY[{functions}] LOOP
                EXECUTE format('ALTER FUNCTION %s {marker}', signature);
            END LOOP;
        END IF;
        END $$
    """)


def downgrade() -> None:
    _mark_leakproof((OVERLAP,), "NOT LEAKPROOF")
    op.execute("DROP INDEX IF EXISTS ix_entities_name_heads")
    op.execute("DROP FUNCTION IF EXISTS engram_entity_heads(text, text[])")
    op.execute("DROP FUNCTION IF EXISTS engram_entity_keys(text, text[])")
    op.execute("DROP FUNCTION IF EXISTS engram_name_key(text)")
    op.execute("ALTER TABLE facts DROP COLUMN contradiction_count")
    op.execute("ALTER TABLE facts DROP COLUMN validation_count")
    op.execute("DROP TRIGGER IF EXISTS trg_arcs_delete_links ON arcs")
    op.execute("DELETE FROM memory_links WHERE source_type = 'arc' OR target_type IN "
               "('procedure', 'arc')")
    _set_check("target_type", f"target_type IN {_in(OLD_TYPES)}")
    _set_check("source_type", f"source_type IN {_in(OLD_SOURCES)}")
    # One relation a pair again: the oldest link of each pair stays.
    op.execute("""
        DELETE FROM memory_links AS l USING memory_links AS o
        WHERE o.tenant_id = l.tenant_id AND o.source_type = l.source_type
          AND o.source_id = l.source_id AND o.target_type = l.target_type
          AND o.target_id = l.target_id
          AND (o.created_at, o.id) < (l.created_at, l.id)
    """)
    op.execute("DROP INDEX IF EXISTS ux_memory_links_id")
    op.execute("ALTER TABLE memory_links DROP COLUMN created_by")
    op.execute("ALTER TABLE memory_links DROP COLUMN reasoning")
    op.execute("ALTER TABLE memory_links DROP COLUMN id")
    _set_key("source_type", "source_id", "target_type", "target_id", "tenant_id")
