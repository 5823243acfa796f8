"""mem_016 entity relations: typed entity-to-entity links with a strength, for graph retrieval.

`memory_links` ends may now be entities, relations gain the typed entity relations (works_at,
knows, ...), and every link has a `strength` in (0, 1] (1 by default) that graph-aware search
multiplies along a path. Deleting an entity deletes its links.

Revision ID: mem_016
Revises: mem_015
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

revision: str = "mem_016"
down_revision: str | None = "mem_015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_RELATIONS = ("derived_from", "supports", "contradicts", "supersedes", "related_to",
                 "based_on")
ENTITY_RELATIONS = ("works_at", "works_on", "knows", "owns", "member_of", "located_in",
                    "part_of", "mentions")
OLD_TYPES = ("episode", "fact", "rule", "run", "run_message", "run_feedback", "agent_event")
# Only a source may be a procedure (mem_015).
OLD_SOURCES = (*OLD_TYPES, "procedure")


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(f"'{value}'" for value in values) + ")"


def _set_check(name: str, condition: str) -> None:
    op.execute(f"ALTER TABLE memory_links DROP CONSTRAINT ck_memory_links_{name}")
    op.execute(f"ALTER TABLE memory_links ADD CONSTRAINT ck_memory_links_{name} "
               f"CHECK ({condition})")


def upgrade() -> None:
    _set_check("relation", f"relation IN {_in(OLD_RELATIONS + ENTITY_RELATIONS)}")
    _set_check("source_type", f"source_type IN {_in((*OLD_SOURCES, 'entity'))}")
    _set_check("target_type", f"target_type IN {_in((*OLD_TYPES, 'entity'))}")
    op.execute("ALTER TABLE memory_links ADD COLUMN strength double precision NOT NULL "
               "DEFAULT 1.0 CONSTRAINT ck_memory_links_strength "
               "CHECK (strength > 0 AND strength <= 1)")
    op.execute(
        "CREATE TRIGGER trg_entities_delete_links AFTER DELETE ON entities "
        "REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT "
        "EXECUTE FUNCTION engram_delete_links_of_deleted('entity')"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS trg_entities_delete_links ON entities")
    op.execute(f"DELETE FROM memory_links WHERE relation NOT IN {_in(OLD_RELATIONS)} "
               f"OR source_type = 'entity' OR target_type = 'entity'")
    op.execute("ALTER TABLE memory_links DROP COLUMN strength")
    _set_check("target_type", f"target_type IN {_in(OLD_TYPES)}")
    _set_check("source_type", f"source_type IN {_in(OLD_SOURCES)}")
    _set_check("relation", f"relation IN {_in(OLD_RELATIONS)}")
