"""mem_042 tenant keys: every key and foreign key between tenant tables carries tenant_id, and
the triggers find rows by tenant and read their transition tables once.

What a store distributed by `tenant_id` (Citus) needs, on one node first:

* Each primary and unique key of a tenant table ends with `tenant_id`: `(id, tenant_id)`
  and the like. Ids are random UUIDs, so the key is unique exactly when the id is. The id
  stays first so the one index serves both a tenant's lookups and the work that pages
  through every tenant by id (the embedding backlog). Each new index is built CONCURRENTLY,
  outside the revision's transaction, then swapped in.
* Foreign keys between tenant tables are composite, `(tenant_id, x) REFERENCES t (tenant_id,
  id)`, and validated after the swap without blocking writes. A distributed table cannot have
  `ON DELETE SET NULL` on a key that holds the distribution column, so the five references
  that cleared themselves are cleared by a trigger after the delete of the rows they name
  (`engram_clear_references`, one statement per reference), and their keys are checked at
  commit. `fact_periods` no longer follows an
  update of a fact's id (ids never change).
* Trigger functions find rows by tenant and id, and a statement-level trigger reads its
  transition table into arrays before it writes: a shard's trigger cannot join a transition
  table with another distributed table.

Revision ID: mem_042
Revises: mem_041
Create Date: 2026-11-29
"""

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from alembic import op

revision: str = "mem_042"
down_revision: str | None = "mem_041"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table: (primary key constraint, its columns before tenant_id)
PRIMARY_KEYS = {
    "agent_events": ("pk_agent_events", "id"),
    "arcs": ("pk_arcs", "id"),
    "entities": ("pk_entities", "id"),
    "episodes": ("pk_episodes", "id"),
    "fact_periods": ("pk_fact_periods", "id"),
    "facts": ("pk_facts", "id"),
    "keyword_postings": ("pk_keyword_postings", "memory_type, memory_id, term"),
    "passages": ("passages_pkey", "id"),
    "procedures": ("pk_procedures", "id"),
    "reflection_consolidations": ("pk_reflection_consolidations", "event_id"),
    "rule_applications": ("pk_rule_applications", "id"),
    "rules": ("pk_rules", "id"),
    "run_feedback": ("pk_run_feedback", "id"),
    "run_messages": ("pk_run_messages", "id"),
    "runs": ("pk_runs", "id"),
    "working_memories": ("pk_working_memories", "id"),
}
# unique index: (table, its columns before tenant_id, its predicate)
UNIQUE_INDEXES = {
    "ux_memory_links_id": ("memory_links", "id", None),
    "ix_passages_episode_id": ("passages", "episode_id, kind, ordinal", "episode_id IS NOT NULL"),
    "ix_passages_fact_id": ("passages", "fact_id, kind, ordinal", "fact_id IS NOT NULL"),
    "ix_passages_rule_id": ("passages", "rule_id, kind, ordinal", "rule_id IS NOT NULL"),
}
# (table, constraint, column, referenced table, ON DELETE); None: cleared by a trigger
# after the delete, the key checked at commit.
FOREIGN_KEYS = [
    ("entities", "fk_entities_merged_into_id_entities", "merged_into_id", "entities", "RESTRICT"),
    ("facts", "fk_facts_entity_id_entities", "entity_id", "entities", "RESTRICT"),
    ("facts", "fk_facts_source_episode_id_episodes", "source_episode_id", "episodes", None),
    ("facts", "fk_facts_supersedes_id_facts", "supersedes_id", "facts", None),
    ("fact_periods", "fk_fact_periods_fact_id_facts", "fact_id", "facts", "CASCADE"),
    ("passages", "passages_episode_id_fkey", "episode_id", "episodes", "CASCADE"),
    ("passages", "passages_fact_id_fkey", "fact_id", "facts", "CASCADE"),
    ("passages", "passages_rule_id_fkey", "rule_id", "rules", "CASCADE"),
    ("procedures", "fk_procedures_superseded_by_procedures", "superseded_by", "procedures", None),
    (
        "reflection_consolidations",
        "fk_reflection_consolidations_event_id_agent_events",
        "event_id",
        "agent_events",
        "CASCADE",
    ),
    ("rule_applications", "fk_rule_applications_rule_id_rules", "rule_id", "rules", "CASCADE"),
    ("rules", "fk_rules_source_episode_id_episodes", "source_episode_id", "episodes", None),
    ("run_feedback", "fk_run_feedback_lesson_rule_id_rules", "lesson_rule_id", "rules", None),
    ("run_feedback", "fk_run_feedback_run_id_runs", "run_id", "runs", "CASCADE"),
    ("run_messages", "fk_run_messages_run_id_runs", "run_id", "runs", "CASCADE"),
]
# The references cleared when the row they name is deleted: table -> [(table, column)].
CLEARED = {
    "episodes": [("facts", "source_episode_id"), ("rules", "source_episode_id")],
    "facts": [("facts", "supersedes_id")],
    "rules": [("run_feedback", "lesson_rule_id")],
    "procedures": [("procedures", "superseded_by")],
}
# Before this revision: the keys whose actions differed from their ON DELETE above.
OLD_ACTIONS = {
    "fk_facts_source_episode_id_episodes": "ON DELETE SET NULL",
    "fk_facts_supersedes_id_facts": "ON DELETE SET NULL",
    "fk_fact_periods_fact_id_facts": "ON UPDATE CASCADE ON DELETE CASCADE",
    "fk_procedures_superseded_by_procedures": "ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED",
    "fk_rules_source_episode_id_episodes": "ON DELETE SET NULL",
    "fk_run_feedback_lesson_rule_id_rules": "ON DELETE SET NULL",
}


def _revision(name: str) -> ModuleType:
    """An earlier revision module, whose SQL builders this one reuses."""
    [path] = Path(__file__).parent.glob(f"*_{name}_*.py")
    spec = importlib.util.spec_from_file_location(f"engram_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _swap_keys(with_tenant: bool) -> None:
    """Build each key's new index concurrently, then make it the key (one short lock each)."""
    suffix = ", tenant_id" if with_tenant else ""
    with op.get_context().autocommit_block():
        for table, (name, columns) in PRIMARY_KEYS.items():
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}_next")
            op.execute(
                f"CREATE UNIQUE INDEX CONCURRENTLY {name}_next ON {table} ({columns}{suffix})"
            )
        for name, (table, columns, predicate) in UNIQUE_INDEXES.items():
            where = f" WHERE {predicate}" if predicate else ""
            op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}_next")
            op.execute(
                f"CREATE UNIQUE INDEX CONCURRENTLY {name}_next "
                f"ON {table} ({columns}{suffix}){where}"
            )
    for table, constraint, *_ in FOREIGN_KEYS:
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {constraint}")
    for table, (name, _) in PRIMARY_KEYS.items():
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")
        op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} PRIMARY KEY USING INDEX {name}_next")
    for name in UNIQUE_INDEXES:
        op.execute(f"DROP INDEX {name}")
        op.execute(f"ALTER INDEX {name}_next RENAME TO {name}")


def _add_foreign_keys(action: Callable[[str, str | None], str], tenant: str) -> None:
    """Add every foreign key NOT VALID, then validate each without blocking writes."""
    for table, constraint, column, referenced, on_delete in FOREIGN_KEYS:
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {constraint} FOREIGN KEY "
            f"({tenant}{column}) REFERENCES {referenced} ({tenant}id) "
            f"{action(constraint, on_delete)} NOT VALID"
        )
    with op.get_context().autocommit_block():
        for table, constraint, *_ in FOREIGN_KEYS:
            op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {constraint}")


def _new_action(_: str, on_delete: str | None) -> str:
    return f"ON DELETE {on_delete}" if on_delete else "DEFERRABLE INITIALLY DEFERRED"


def _old_action(constraint: str, on_delete: str | None) -> str:
    return OLD_ACTIONS.get(constraint) or f"ON DELETE {on_delete}"


# Both read the deleted rows once, then work one tenant at a time, each statement naming
# its tenant (on a distributed store a shard's trigger may only reach its tenant's shards).
CLEAR_REFERENCES = """
CREATE FUNCTION engram_clear_references() RETURNS trigger
LANGUAGE plpgsql SET "engram.butlers" TO '' AS $$
    DECLARE
        tenants text[];
        ids uuid[];
        tenant text;
        i integer;
    BEGIN
        SELECT array_agg(tenant_id), array_agg(id) INTO tenants, ids FROM deleted_rows;
        FOR tenant IN SELECT DISTINCT unnest(tenants) LOOP
            i := 0;
            -- TG_ARGV: pairs of (table, column) that may name a deleted row.
            WHILE i < TG_NARGS LOOP
                EXECUTE format(
                    'UPDATE %I SET %I = NULL WHERE tenant_id = $1 AND %I = ANY ($2)',
                    TG_ARGV[i], TG_ARGV[i + 1], TG_ARGV[i + 1])
                USING tenant, ARRAY(SELECT d.id FROM unnest(tenants, ids) AS d(tenant_id, id)
                                    WHERE d.tenant_id = tenant);
                i := i + 2;
            END LOOP;
        END LOOP;
        RETURN NULL;
    END $$
"""

DELETE_LINKS_BY_TENANT = """
CREATE OR REPLACE FUNCTION engram_delete_links_of_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
    DECLARE
        tenants text[];
        ids uuid[];
        tenant text;
        gone uuid[];
    BEGIN
        SELECT array_agg(tenant_id), array_agg(id) INTO tenants, ids FROM deleted_rows;
        FOR tenant IN SELECT DISTINCT unnest(tenants) LOOP
            gone := ARRAY(SELECT d.id FROM unnest(tenants, ids) AS d(tenant_id, id)
                          WHERE d.tenant_id = tenant);
            DELETE FROM memory_links
            WHERE tenant_id = tenant AND source_type = TG_ARGV[0] AND source_id = ANY (gone);
            DELETE FROM memory_links
            WHERE tenant_id = tenant AND target_type = TG_ARGV[0] AND target_id = ANY (gone);
        END LOOP;
        RETURN NULL;
    END $$
"""

DELETE_LINKS_BY_ID = """
CREATE OR REPLACE FUNCTION engram_delete_links_of_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM memory_links
            WHERE source_type = TG_ARGV[0] AND source_id IN (SELECT id FROM deleted_rows);
            DELETE FROM memory_links
            WHERE target_type = TG_ARGV[0] AND target_id IN (SELECT id FROM deleted_rows);
            RETURN NULL;
        END
        $$
"""


def _passage_scope(by_tenant: bool) -> str:
    tenant = " AND tenant_id = NEW.tenant_id" if by_tenant else ""
    return f"""
        CREATE OR REPLACE FUNCTION engram_passage_scope() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.episode_id IS NOT NULL THEN
                SELECT butler INTO NEW.scope FROM episodes WHERE id = NEW.episode_id{tenant};
            ELSIF NEW.fact_id IS NOT NULL THEN
                SELECT scope INTO NEW.scope FROM facts WHERE id = NEW.fact_id{tenant};
            ELSIF NEW.rule_id IS NOT NULL THEN
                SELECT scope INTO NEW.scope FROM rules WHERE id = NEW.rule_id{tenant};
            END IF;
            RETURN NEW;
        END $$
    """


# The keyword statistics, kept per tenant. Every statement names its tenant (`{tenant}`,
# a variable or OLD/NEW's), so on a distributed store it runs on the tenant's own shards;
# `{docs}` is the tenant's changed documents (id, scope, search_vector).


def _add(memory_type: str, docs: str, tenant: str, counted: bool) -> str:
    """Add the documents to the tenant's counts (unless not `counted`) and postings."""
    counts = f"""
        INSERT INTO keyword_corpus AS c (tenant_id, doc_count, total_len)
        SELECT {tenant}, count(*), sum(engram_tsvector_length(d.search_vector))
        FROM {docs} AS d WHERE length(d.search_vector) > 0 HAVING count(*) > 0
        ON CONFLICT (tenant_id) DO UPDATE
            SET doc_count = c.doc_count + excluded.doc_count,
                total_len = c.total_len + excluded.total_len;
        INSERT INTO keyword_terms AS t (tenant_id, term, doc_freq)
        SELECT {tenant}, lex.lexeme, count(*)
        FROM {docs} AS d, unnest(d.search_vector) AS lex
        GROUP BY lex.lexeme ORDER BY lex.lexeme
        ON CONFLICT (tenant_id, term) DO UPDATE SET doc_freq = t.doc_freq + excluded.doc_freq;
        INSERT INTO keyword_scope_corpus AS c (tenant_id, scope, doc_count, total_len)
        SELECT {tenant}, d.scope, count(*), sum(engram_tsvector_length(d.search_vector))
        FROM {docs} AS d WHERE length(d.search_vector) > 0
        GROUP BY d.scope ORDER BY d.scope
        ON CONFLICT (tenant_id, scope) DO UPDATE
            SET doc_count = c.doc_count + excluded.doc_count,
                total_len = c.total_len + excluded.total_len;
        INSERT INTO keyword_scope_terms AS t (tenant_id, scope, term, doc_freq)
        SELECT {tenant}, d.scope, lex.lexeme, count(*)
        FROM {docs} AS d, unnest(d.search_vector) AS lex
        GROUP BY d.scope, lex.lexeme ORDER BY d.scope, lex.lexeme
        ON CONFLICT (tenant_id, scope, term) DO UPDATE
            SET doc_freq = t.doc_freq + excluded.doc_freq;
    """
    # Postings at the average length with these documents counted (or as counted so far,
    # else the document's own length); each document's length reckoned once.
    return (
        (counts if counted else "")
        + f"""
        SELECT c.total_len::float8 / nullif(c.doc_count, 0) INTO k_avgdl
        FROM keyword_corpus AS c WHERE c.tenant_id = {tenant};
        WITH docs AS MATERIALIZED (
            SELECT d.id, d.scope, d.search_vector,
                   engram_tsvector_length(d.search_vector) AS doc_len
            FROM {docs} AS d)
        INSERT INTO keyword_postings
            (tenant_id, memory_type, scope, term, memory_id, tf, doc_len, impact)
        SELECT {tenant}, '{memory_type}', docs.scope, lex.lexeme, docs.id,
               coalesce(array_length(lex.positions, 1), 1), docs.doc_len,
               engram_bm25_tf(coalesce(array_length(lex.positions, 1), 1), docs.doc_len,
                              coalesce(k_avgdl, docs.doc_len))
        FROM docs CROSS JOIN LATERAL unnest(docs.search_vector) AS lex;
    """
    )


def _remove(memory_type: str, docs: str, tenant: str) -> str:
    """Remove the documents from the tenant's counts and postings."""
    return f"""
        UPDATE keyword_corpus AS c
        SET doc_count = c.doc_count - gone.n, total_len = c.total_len - gone.len
        FROM (SELECT count(*) AS n, sum(engram_tsvector_length(d.search_vector)) AS len
              FROM {docs} AS d WHERE length(d.search_vector) > 0 HAVING count(*) > 0) AS gone
        WHERE c.tenant_id = {tenant};
        UPDATE keyword_terms AS t SET doc_freq = t.doc_freq - gone.n
        FROM (SELECT lex.lexeme AS term, count(*) AS n
              FROM {docs} AS d, unnest(d.search_vector) AS lex GROUP BY lex.lexeme) AS gone
        WHERE t.tenant_id = {tenant} AND t.term = gone.term;
        DELETE FROM keyword_terms AS t
        USING (SELECT DISTINCT lex.lexeme AS term
               FROM {docs} AS d, unnest(d.search_vector) AS lex) AS gone
        WHERE t.tenant_id = {tenant} AND t.term = gone.term AND t.doc_freq <= 0;
        DELETE FROM keyword_postings AS p USING {docs} AS d
        WHERE p.tenant_id = {tenant} AND p.memory_type = '{memory_type}' AND p.memory_id = d.id;
        UPDATE keyword_scope_corpus AS c
        SET doc_count = c.doc_count - gone.n, total_len = c.total_len - gone.len
        FROM (SELECT d.scope, count(*) AS n, sum(engram_tsvector_length(d.search_vector)) AS len
              FROM {docs} AS d WHERE length(d.search_vector) > 0 GROUP BY d.scope) AS gone
        WHERE c.tenant_id = {tenant} AND c.scope = gone.scope;
        UPDATE keyword_scope_terms AS t SET doc_freq = t.doc_freq - gone.n
        FROM (SELECT d.scope, lex.lexeme AS term, count(*) AS n
              FROM {docs} AS d, unnest(d.search_vector) AS lex
              GROUP BY d.scope, lex.lexeme) AS gone
        WHERE t.tenant_id = {tenant} AND t.scope = gone.scope AND t.term = gone.term;
        DELETE FROM keyword_scope_terms AS t
        USING (SELECT DISTINCT d.scope, lex.lexeme AS term
               FROM {docs} AS d, unnest(d.search_vector) AS lex) AS gone
        WHERE t.tenant_id = {tenant} AND t.scope = gone.scope AND t.term = gone.term
          AND t.doc_freq <= 0;
        DELETE FROM keyword_scope_corpus AS c
        USING (SELECT DISTINCT d.scope FROM {docs} AS d) AS gone
        WHERE c.tenant_id = {tenant} AND c.scope = gone.scope AND c.doc_count <= 0;
    """


# A statement trigger's changed documents, read once into arrays (a shard's trigger cannot
# join its transition table with a distributed table), then one tenant at a time.
TENANT_DOCUMENTS = (
    "(SELECT k.id, k.scope, k.search_vector "
    "FROM unnest(k_tenants, k_ids, k_scopes, k_vectors) AS k(tenant_id, id, scope, search_vector) "
    "WHERE k.tenant_id = k_tenant)"
)
DECLARATIONS = """
    DECLARE
        k_tenants text[]; k_ids uuid[]; k_scopes text[]; k_vectors tsvector[];
        k_tenant text; k_avgdl float8;
"""


def _per_tenant(relation: str, scope_column: str, body: str) -> str:
    return f"""{DECLARATIONS}
        BEGIN
            SELECT array_agg(tenant_id), array_agg(id), array_agg({scope_column}),
                   array_agg(search_vector)
            INTO k_tenants, k_ids, k_scopes, k_vectors
            FROM {relation} WHERE search_vector IS NOT NULL;
            FOR k_tenant IN SELECT DISTINCT unnest(k_tenants) LOOP
                {body}
            END LOOP;
            RETURN NULL;
        END
    """


def _row(record: str, scope_column: str) -> str:
    return (
        f"(SELECT {record}.id, {record}.{scope_column} AS scope, {record}.search_vector "
        f"WHERE {record}.search_vector IS NOT NULL)"
    )


def _keyword_functions() -> dict[str, str]:
    """Every keyword trigger function's body, by name."""
    mem_010 = _revision("mem_010")
    bodies = {}
    for table, (memory_type, scope_column) in mem_010.MEMORY_TABLES.items():
        added = _add(memory_type, TENANT_DOCUMENTS, "k_tenant", counted=True)
        if table == "episodes":
            later = _add(memory_type, TENANT_DOCUMENTS, "k_tenant", counted=False)
            added = f"""
                IF current_setting('engram.keyword_counts_later', true) = 'on' THEN
                    {later}
                ELSE
                    {added}
                END IF;"""
        removed = _remove(memory_type, TENANT_DOCUMENTS, "k_tenant")
        bodies[f"engram_keyword_{table}_insert"] = _per_tenant("new_rows", scope_column, added)
        bodies[f"engram_keyword_{table}_delete"] = _per_tenant("old_rows", scope_column, removed)
        bodies[f"engram_keyword_{table}_update"] = f"""{DECLARATIONS}
            BEGIN
                {_remove(memory_type, _row("OLD", scope_column), "OLD.tenant_id")}
                {_add(memory_type, _row("NEW", scope_column), "NEW.tenant_id", counted=True)}
                RETURN NULL;
            END
        """
    return bodies


def _replace_keyword_functions(per_tenant: bool) -> None:
    """The keyword trigger functions: per tenant, or as mem_040 left them."""
    if not per_tenant:
        mem_040 = _revision("mem_040")
        mem_040._replace(mem_040._counted_first, mem_040._postings_only)
        return
    for name, body in _keyword_functions().items():
        op.execute(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ {body} $$"
        )


def upgrade() -> None:
    _swap_keys(with_tenant=True)
    op.execute(CLEAR_REFERENCES)
    for table, references in CLEARED.items():
        arguments = ", ".join(f"'{part}'" for pair in references for part in pair)
        op.execute(
            f"CREATE TRIGGER trg_{table}_clear_references AFTER DELETE ON {table} "
            "REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT "
            f"EXECUTE FUNCTION engram_clear_references({arguments})"
        )
    op.execute(DELETE_LINKS_BY_TENANT)
    op.execute(_passage_scope(by_tenant=True))
    _replace_keyword_functions(per_tenant=True)
    _add_foreign_keys(_new_action, "tenant_id, ")


def downgrade() -> None:
    _replace_keyword_functions(per_tenant=False)
    op.execute(_passage_scope(by_tenant=False))
    op.execute(DELETE_LINKS_BY_ID)
    for table in CLEARED:
        op.execute(f"DROP TRIGGER trg_{table}_clear_references ON {table}")
    op.execute("DROP FUNCTION engram_clear_references()")
    _swap_keys(with_tenant=False)
    _add_foreign_keys(_old_action, "")
