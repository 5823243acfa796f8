"""mem_012 row-level security: tenants kept apart by the database too.

* Role `engram_app` (NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE, LOGIN without a
  password) is created when missing and the migrating role may create roles; it gets DML on
  every table and sequence of the schema, now and (default privileges) for tables this owner
  creates later. Requests and jobs run as it; migrations run as the owner.
* Every table with a `tenant_id` column gets RLS enabled and forced, with the policy of
  `app.core.rls` (tenant setting, or the system setting). Later revisions that add a tenant table
  call `app.core.rls.enable_tenant_rls(op, table)`.
* `tenant_id` loses its server default `'default'` everywhere: a row without a tenant is an
  error, not a row of tenant 'default'.
* `memory_links` is keyed by tenant: its primary key gains `tenant_id` (last, so lookups by
  source that the delete triggers make still use it).

The downgrade removes the policies, the defaults' absence and the key change and revokes this
database's grants; the role itself is cluster-wide (other databases may use it) and stays.

Revision ID: mem_012
Revises: mem_011
Create Date: 2026-11-22
"""

from collections.abc import Sequence

from alembic import op

from app.core.rls import APP_ROLE, POLICY_NAME, disable_tenant_rls, enable_tenant_rls

revision: str = "mem_012"
down_revision: str | None = "mem_011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TENANT_TABLES_SQL = """
    SELECT c.table_name FROM information_schema.columns c
    JOIN information_schema.tables t
      ON t.table_schema = c.table_schema AND t.table_name = c.table_name
    WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id'
      AND t.table_type = 'BASE TABLE'
    ORDER BY 1
"""
DEFAULTED_SQL = TENANT_TABLES_SQL.replace(
    "AND t.table_type", "AND c.column_default IS NOT NULL AND t.table_type")
# Tables whose tenant_id had the server default 'default' before this revision.
DEFAULTED_BEFORE = ("episodes", "facts", "rules", "memory_links", "entities",
                    "rule_applications")


# Under RLS PostgreSQL uses a condition in an index scan only if its functions are LEAKPROOF
# (they cannot reveal a row through an error). These are, in substance (their errors depend
# on the pattern, never on the row), but are not marked so: unmarked, entity resolution's
# LIKE, alias @> and trigram lookups fall back to scanning every entity of the tenant. Marking
# them takes a superuser; without one the lookups stay correct, only slower.
LEAKPROOF_FUNCTIONS = ("pg_catalog.lower(text)", "pg_catalog.textlike(text, text)",
                       "pg_catalog.arraycontains(anyarray, anyarray)",
                       "engram_lower_aliases(text[])")
TRIGRAM_FUNCTIONS = ("similarity_op(text, text)", "word_similarity_commutator_op(text, text)")


def _mark_leakproof(leakproof: bool) -> None:
    marker = "LEAKPROOF" if leakproof else "NOT LEAKPROOF"
    functions = ", ".join(f"'{name}'" for name in LEAKPROOF_FUNCTIONS)
    trigram = ", ".join(f"'{name}'" for name in TRIGRAM_FUNCTIONS)
    op.execute(f"""
        DO $$
        DECLARE signature text;
        BEGIN
        IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            RAISE NOTICE 'not a superuser: entity name and alias lookups under row-level '
                         'security cannot use their indexes and read every entity of the '
                         'tenant (docs/operations.md)';
            RETURN;
        END IF;
        FOREACH signature IN ARRAY ARRAY[{functions}] LOOP
            EXECUTE format('ALTER FUNCTION %s {marker}', signature);
        END LOOP;
        IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
            FOREACH signature IN ARRAY ARRAY[{trigram}] LOOP
                EXECUTE format('ALTER FUNCTION %s {marker}', signature);
            END LOOP;
        END IF;
        END $$
    """)


def _tables(sql: str) -> list[str]:
    return [row[0] for row in op.get_bind().exec_driver_sql(sql)]


def upgrade() -> None:
    op.execute(f"""
        DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user
                       AND (rolsuper OR rolcreaterole)) THEN
                CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            ELSE
                RAISE NOTICE 'role {APP_ROLE} is missing and % may not create it: create it '
                             'and grant it DML, or set ENGRAM_APP_DATABASE_URL', current_user;
            END IF;
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            EXECUTE format('GRANT CONNECT ON DATABASE %I TO {APP_ROLE}', current_database());
            GRANT USAGE ON SCHEMA public TO {APP_ROLE};
            GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {APP_ROLE};
            GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE};
            ALTER DEFAULT PRIVILEGES IN SCHEMA public
                GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE};
            ALTER DEFAULT PRIVILEGES IN SCHEMA public
                GRANT USAGE, SELECT ON SEQUENCES TO {APP_ROLE};
            REVOKE INSERT, UPDATE, DELETE ON alembic_version FROM {APP_ROLE};
        END IF;
        END $$
    """)
    for table in _tables(DEFAULTED_SQL):
        op.execute(f'ALTER TABLE "{table}" ALTER COLUMN tenant_id DROP DEFAULT')
    op.execute("ALTER TABLE memory_links DROP CONSTRAINT pk_memory_links")
    op.execute("ALTER TABLE memory_links ADD CONSTRAINT pk_memory_links PRIMARY KEY "
               "(source_type, source_id, target_type, target_id, tenant_id)")
    for table in _tables(TENANT_TABLES_SQL):
        enable_tenant_rls(op, table)
    _mark_leakproof(True)


def downgrade() -> None:
    for row in op.get_bind().exec_driver_sql(
            f"SELECT tablename FROM pg_policies WHERE schemaname = 'public' "
            f"AND policyname = '{POLICY_NAME}'"):
        disable_tenant_rls(op, row[0])
    _mark_leakproof(False)
    op.execute("ALTER TABLE memory_links DROP CONSTRAINT pk_memory_links")
    op.execute("ALTER TABLE memory_links ADD CONSTRAINT pk_memory_links PRIMARY KEY "
               "(source_type, source_id, target_type, target_id)")
    for table in DEFAULTED_BEFORE:
        op.execute(f"ALTER TABLE \"{table}\" ALTER COLUMN tenant_id SET DEFAULT 'default'")
    op.execute(f"""
        DO $$ BEGIN
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
            ALTER DEFAULT PRIVILEGES IN SCHEMA public
                REVOKE SELECT, INSERT, UPDATE, DELETE ON TABLES FROM {APP_ROLE};
            ALTER DEFAULT PRIVILEGES IN SCHEMA public
                REVOKE USAGE, SELECT ON SEQUENCES FROM {APP_ROLE};
            REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {APP_ROLE};
            REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {APP_ROLE};
            REVOKE USAGE ON SCHEMA public FROM {APP_ROLE};
            EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM {APP_ROLE}', current_database());
        END IF;
        END $$
    """)
