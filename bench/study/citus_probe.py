"""What Citus says today to distributing Engram's schema (docs/scaling.md, "Distributing by
tenant"): on a database migrated to head, each table of the plan is tried alone, in a
transaction rolled back afterwards, as a reference table or distributed by tenant_id, and
Citus's refusal (or its acceptance) is recorded; a refused table is tried again past the
first two refusals (embedding_versions a reference table, triggers allowed), which shows
the next change it needs.

    python -m bench.study.citus_probe            # builds Citus if needed, starts a cluster

Needs what tests/citus needs (tests/support/citus.py): a Citus source and a C compiler.
"""

import asyncio
import re
from dataclasses import dataclass

import asyncpg

from app.postgres.db import to_libpq_url

# The plan of docs/scaling.md: copied to every node; kept on the coordinator (not tried);
# every other table is distributed by tenant_id.
REFERENCE_TABLES = ("embedding_versions", "embedding_switches")
COORDINATOR_TABLES = (
    "alembic_version",
    "api_keys",
    "console_sessions",
    "embedding_backlog_lease",
    "jobs",
    "memory_events",
    "workers",
)
DISTRIBUTION_COLUMN = "tenant_id"
TABLES_SQL = """
    SELECT tablename FROM pg_tables WHERE schemaname = 'public'
     AND tablename NOT IN (SELECT logicalrelid::regclass::text FROM pg_dist_partition)
     ORDER BY tablename"""


TRIGGERS_SQL = """
    SELECT string_agg(tgname, ', ' ORDER BY tgname) FROM pg_trigger
     WHERE tgrelid = $1::regclass AND NOT tgisinternal"""
# Past the first two refusals: embedding_versions made a reference table without converting
# the local tables that refer to it, and triggers allowed on distributed tables (then they
# run on the shards).
PAST_FIRST_REFUSALS = [
    "SET LOCAL citus.enable_local_reference_table_foreign_keys = off",
    "SELECT create_reference_table('embedding_versions')",
    "SET LOCAL citus.enable_unsafe_triggers = on",
]


@dataclass(frozen=True)
class Finding:
    """One table's attempt: how it was to be placed, what Citus answered (None: accepted),
    its triggers, and the answer past the first refusals (PAST_FIRST_REFUSALS)."""

    table: str
    placement: str
    refusal: str | None
    triggers: str | None = None
    then: str | None = None


def attempt_sql(table: str) -> tuple[str, str]:
    """(placement, the statement) for `table` under the plan."""
    if table in REFERENCE_TABLES:
        return "reference", f"SELECT create_reference_table('{table}')"
    return (
        "distributed",
        f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}', "
        "colocate_with => 'default')",
    )


async def attempt(conn: asyncpg.Connection, statements: list[str]) -> str | None:
    """Run `statements` in a transaction rolled back afterwards; the error, or None."""
    transaction = conn.transaction()
    await transaction.start()
    try:
        for statement in statements:
            await conn.execute(statement)
        return None
    except asyncpg.PostgresError as error:
        detail = getattr(error, "detail", None)
        return str(error).splitlines()[0] + (f" ({detail})" if detail else "")
    finally:
        await transaction.rollback()


async def probe(url: str) -> list[Finding]:
    """Try every planned table of the database at `url` (a Citus coordinator), alone."""
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        tables = [row["tablename"] for row in await conn.fetch(TABLES_SQL)]
        findings = []
        for table in (t for t in tables if t not in COORDINATOR_TABLES):
            placement, statement = attempt_sql(table)
            refusal = await attempt(conn, [statement])
            triggers = await conn.fetchval(TRIGGERS_SQL, table)
            then = None
            if refusal is not None:
                past = (
                    PAST_FIRST_REFUSALS[:1]
                    if table == "embedding_versions"
                    else PAST_FIRST_REFUSALS
                )
                then = await attempt(conn, [*past, statement])
            findings.append(Finding(table, placement, refusal, triggers, then))
        return findings
    finally:
        await conn.close()


# Citus's refusals by what they ask of the schema (the first match wins).
REFUSAL_KINDS = (
    ("because it has triggers", "triggers"),
    ("Citus applies a conversion to all the local tables", "local tables refer to it"),
    ("Subqueries are not supported in policies", "subquery in a policy"),
    ("do not include the partition column", "key without tenant_id"),
    ("cannot create foreign key constraint", "foreign key without tenant_id"),
)


def refusal_kind(refusal: str | None) -> str:
    """What a refusal asks for, in a few words ("accepted" for None)."""
    if refusal is None:
        return "accepted"
    for phrase, kind in REFUSAL_KINDS:
        if phrase in refusal:
            return kind
    if match := re.match(r'referenced table "(\w+)" must be', refusal):
        return f"foreign key to {match.group(1)}"
    return refusal


def table_lines(findings: list[Finding]) -> list[str]:
    """The findings as the rows of a Markdown table."""
    lines = [
        "| table | as | Citus 14 says | triggers | past the first refusals |",
        "|---|---|---|---|---|",
    ]
    for f in findings:
        said, then = (f"`{a}`" if a else "accepted" for a in (f.refusal, f.then))
        then = then if f.refusal else ""
        lines.append(f"| {f.table} | {f.placement} | {said} | {f.triggers or ''} | {then} |")
    return lines


async def main() -> None:
    """Start a cluster, migrate a database to head on it, print the findings."""
    from tests.support.citus import migrated_database, start_cluster

    cluster, _ = await start_cluster("engram")
    try:
        url = await migrated_database(cluster, "engram_probe")
        print("\n".join(table_lines(await probe(url))))
    finally:
        cluster.stop()


if __name__ == "__main__":
    asyncio.run(main())
