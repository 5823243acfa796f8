"""Row-level security: the policy every tenant table carries, and the setting it reads.

Every table with a `tenant_id` column has RLS enabled and forced (so the table owner is
bound too) with one policy, `tenant_isolation`: a row is visible and writable only when

* its `tenant_id` equals the transaction's `engram.tenant_id` (a request, or one unit of
  background work for one tenant), or
* the transaction declared itself system work with `engram.system = 'on'` (job claims, the
  scheduler, the list of tenants a sweep walks, API-key lookup, migrations, the CLI).

Both settings are set with `set_config(..., true)`, so they end with the transaction and never
leak to the next user of a pooled connection. A transaction that sets neither sees no row of
any tenant table and cannot write one: forgetting the tenant fails closed.

A migration that adds a tenant table calls `enable_tenant_rls(op, "table")` in `upgrade()`
and `disable_tenant_rls(op, "table")` in `downgrade()`; `tests/api/access/test_rls.py` fails
for a tenant table without the policy.
"""

from dataclasses import dataclass
from typing import Any

from app.core.constants import GLOBAL_SCOPE

TENANT_SETTING = "engram.tenant_id"
SYSTEM_SETTING = "engram.system"
# The job a unit of background work reports its progress to: a system job (tenant_id NULL)
# is visible to a tenant transaction of that job through this setting alone.
JOB_SETTING = "engram.job_id"
POLICY_NAME = "tenant_isolation"
# The role requests run as: no superuser, no BYPASSRLS, only DML on the tables.
APP_ROLE = "engram_app"

_TENANT_MATCH = f"tenant_id = current_setting('{TENANT_SETTING}', true)"
_SYSTEM_ON = f"coalesce(current_setting('{SYSTEM_SETTING}', true), '') = 'on'"
_OWN_JOB = f"id::text = current_setting('{JOB_SETTING}', true)"


def policy_condition(table: str) -> str:
    """The USING / WITH CHECK expression of `table`'s policy."""
    extra = f" OR {_OWN_JOB}" if table == "jobs" else ""
    return f"({_TENANT_MATCH} OR {_SYSTEM_ON}{extra})"


def enable_statements(table: str) -> list[str]:
    """The DDL that puts `table` under the tenant policy (idempotent)."""
    condition = policy_condition(table)
    return [
        f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
        f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
        f'DROP POLICY IF EXISTS {POLICY_NAME} ON "{table}"',
        f'CREATE POLICY {POLICY_NAME} ON "{table}" USING {condition} WITH CHECK {condition}',
    ]


def disable_statements(table: str) -> list[str]:
    """The DDL that takes `table` out of the tenant policy."""
    return [
        f'DROP POLICY IF EXISTS {POLICY_NAME} ON "{table}"',
        f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY',
        f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY',
    ]


def enable_tenant_rls(op: Any, table: str) -> None:
    """For migrations: enable, force and create the tenant policy on `table`."""
    for statement in enable_statements(table):
        op.execute(statement)


def disable_tenant_rls(op: Any, table: str) -> None:
    """For migrations (downgrade): drop the tenant policy of `table` and disable RLS."""
    for statement in disable_statements(table):
        op.execute(statement)


# Keys limited to butlers (mem_026). A second, RESTRICTIVE set of policies is AND-ed with the
# tenant policy on every table with a butler dimension: with `engram.butlers` unset or empty
# (unlimited keys, background jobs, the CLI) they let every row through; with a
# comma-separated list of butlers a row must belong to one of them (or, where a table has
# one, to the shared 'global' scope for reading). `engram.key_id` is the limited key itself:
# audit events and jobs show a limited key only its own. Each setting is read once per
# statement (an InitPlan), so an unlimited key's scan pays no per-row cost.
BUTLERS_SETTING = "engram.butlers"
KEY_SETTING = "engram.key_id"
BUTLER_POLICY_PREFIX = "butler_limit"

_UNLIMITED = f"(SELECT coalesce(current_setting('{BUTLERS_SETTING}', true), '') = '')"
# Cast, so `= ANY` takes the array the subquery returns rather than the subquery's rows.
_KEY_BUTLERS = f"(SELECT string_to_array(current_setting('{BUTLERS_SETTING}', true), ','))::text[]"
_OWN_KEY = f"(SELECT current_setting('{KEY_SETTING}', true))"


@dataclass(frozen=True)
class _Settings:
    """How a policy reads the key's settings: once per statement through a subquery, or per
    row, as a distributed table's policies must (Citus refuses subqueries in policies)."""

    unlimited: str
    butlers: str
    own_key: str
    per_row: bool


ONCE = _Settings(_UNLIMITED, _KEY_BUTLERS, _OWN_KEY, per_row=False)
PER_ROW = _Settings(
    f"coalesce(current_setting('{BUTLERS_SETTING}', true), '') = ''",
    f"string_to_array(current_setting('{BUTLERS_SETTING}', true), ',')",
    f"current_setting('{KEY_SETTING}', true)",
    per_row=True,
)


def _linked(kind: str, row_id: str) -> str:
    return f"engram_row_visible({kind}, {row_id})"


def _linked_on_shard(kind: str, row_id: str) -> str:
    return f"engram_row_visible_on_shard({kind}, tenant_id, {row_id})"


def butler_limits(read: _Settings = ONCE) -> dict[str, tuple[str, str]]:
    """table -> (what a limited key may read and update, what it may insert and delete)."""

    def among(column: str) -> str:
        return f"{column} = ANY ({read.butlers})"

    def among_or_global(column: str) -> str:
        return f"({column} = '{GLOBAL_SCOPE}' OR {among(column)})"

    linked = _linked_on_shard if read.per_row else _linked

    def follows(kind: str, column: str, table: str, alias: str) -> str:
        if read.per_row:
            return linked(f"'{kind}'", column)
        return f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.id = {column})"

    own = f"actor_key_id::text = {read.own_key}"
    return {
        "episodes": (among("butler"), among("butler")),
        "facts": (among_or_global("scope"), among("scope")),
        "rules": (among_or_global("scope"), among("scope")),
        "arcs": (among_or_global("scope"), among("scope")),
        "procedures": (among("agent_id"), among("agent_id")),
        "working_memories": (among("agent_id"), among("agent_id")),
        "agent_events": (
            f"(visibility = '{GLOBAL_SCOPE}' OR {among('agent_id')})",
            among("agent_id"),
        ),
        # Copies of a memory's scope, kept by triggers in the writer's transaction.
        "passages": (among_or_global("scope"), among_or_global("scope")),
        "keyword_postings": (among_or_global("scope"), among_or_global("scope")),
        "keyword_scope_corpus": (among_or_global("scope"), among_or_global("scope")),
        "keyword_scope_terms": (among_or_global("scope"), among_or_global("scope")),
        # Rows that hang off a memory follow it; a link needs both of its ends.
        "fact_periods": (follows("fact", "fact_id", "facts", "f"),) * 2,
        "rule_applications": (follows("rule", "rule_id", "rules", "r"),) * 2,
        "memory_links": (
            (f"({linked('source_type', 'source_id')} AND {linked('target_type', 'target_id')})"),
        )
        * 2,
        # Runs belong to no butler: they are the tenant's, for unlimited keys only.
        "runs": ("false", "false"),
        "run_messages": ("false", "false"),
        "run_feedback": ("false", "false"),
        "memory_events": (own,) * 2,
        "jobs": (own,) * 2,
    }


BUTLER_LIMITS = butler_limits()

# The table of each kind of row a link, a graph edge, a fact period or a rule application
# names; a kind not here (an entity) is always visible.
ROW_TABLES = {
    "episode": "episodes",
    "fact": "facts",
    "rule": "rules",
    "procedure": "procedures",
    "arc": "arcs",
    "run": "runs",
    "run_message": "run_messages",
    "run_feedback": "run_feedback",
    "agent_event": "agent_events",
}

# Whether a row a link or graph edge names is one the transaction may read. SECURITY INVOKER
# (the default), so the row-level policies of the named table decide.
_ROW_VISIBLE_CASES = "\n".join(
    f"        WHEN '{kind}' THEN EXISTS (SELECT 1 FROM {table} WHERE id = row_id)"
    for kind, table in ROW_TABLES.items()
)
ROW_VISIBLE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION engram_row_visible(kind text, row_id uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT CASE kind
{_ROW_VISIBLE_CASES}
        ELSE true
    END
$$
"""

# The same on a shard of a distributed table, where a query of a distributed table is refused:
# the named row is looked up in the shard of its table that holds the tenant, which is on the
# same worker (the tables are colocated by tenant).
_ROW_TABLE_CASES = " ".join(f"WHEN '{kind}' THEN '{table}'" for kind, table in ROW_TABLES.items())
ROW_VISIBLE_ON_SHARD_FUNCTION = f"""
CREATE OR REPLACE FUNCTION engram_row_visible_on_shard(kind text, tenant text, row_id uuid)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
    relation text := CASE kind {_ROW_TABLE_CASES} END;
    found boolean;
BEGIN
    IF relation IS NULL THEN
        RETURN true;
    END IF;
    EXECUTE format(
        'SELECT EXISTS (SELECT 1 FROM %s WHERE tenant_id = $1 AND id = $2)',
        shard_name(relation::regclass, get_shard_id_for_distribution_column(relation, tenant))
    ) INTO found USING tenant, row_id;
    RETURN found;
END
$$
"""


def butler_policy_statements(table: str, read: _Settings = ONCE) -> list[str]:
    """The DDL of `table`'s restrictive butler policies (idempotent), reading the key's
    settings once per statement, or per row (`PER_ROW`, for a distributed table)."""
    limits = BUTLER_LIMITS[table] if read is ONCE else butler_limits(read)[table]
    unlimited = read.unlimited
    read_rule, write_rule = f"({unlimited} OR {limits[0]})", f"({unlimited} OR {limits[1]})"
    return _per_command(table, BUTLER_POLICY_PREFIX, "AS RESTRICTIVE ", read_rule, write_rule)


def _per_command(table: str, prefix: str, kind: str, read_rule: str, write_rule: str) -> list[str]:
    """DROP and CREATE of one policy per command named `<prefix>_<command>` (`kind`: "" or
    "AS RESTRICTIVE "): reads and updates by `read_rule`, inserts and deletes by
    `write_rule`."""
    clauses = {
        "select": f"FOR SELECT USING {read_rule}",
        "insert": f"FOR INSERT WITH CHECK {write_rule}",
        "update": f"FOR UPDATE USING {read_rule} WITH CHECK {read_rule}",
        "delete": f"FOR DELETE USING {write_rule}",
    }
    statements = []
    for command, clause in clauses.items():
        name = f"{prefix}_{command}"
        statements.append(f'DROP POLICY IF EXISTS {name} ON "{table}"')
        statements.append(f'CREATE POLICY {name} ON "{table}" {kind}{clause}')
    return statements


# Citus copies a policy to the shards without AS RESTRICTIVE: there a butler policy would be
# OR-ed with the tenant policy instead of AND-ed. A distributed table therefore carries only
# permissive policies, one per command, each the tenant's rule AND the butler rule.
DISTRIBUTED_POLICY_PREFIX = "tenant_butler"


def distributed_policy_statements(table: str) -> list[str]:
    """The DDL that replaces `table`'s tenant and butler policies by permissive ones per
    command that hold both rules (per row, for a distributed table; idempotent)."""
    limits = butler_limits(PER_ROW)[table]
    unlimited = PER_ROW.unlimited
    tenant = f"({_TENANT_MATCH} AND ({unlimited} OR {{}}))"
    read_rule = f"({tenant.format(limits[0])} OR {_SYSTEM_ON})"
    write_rule = f"({tenant.format(limits[1])} OR {_SYSTEM_ON})"
    return [
        *drop_butler_policy_statements(table),
        f'DROP POLICY IF EXISTS {POLICY_NAME} ON "{table}"',
        *_per_command(table, DISTRIBUTED_POLICY_PREFIX, "", read_rule, write_rule),
    ]


def drop_butler_policy_statements(table: str) -> list[str]:
    """The DDL that drops `table`'s butler policies."""
    return [
        f'DROP POLICY IF EXISTS {BUTLER_POLICY_PREFIX}_{command} ON "{table}"'
        for command in ("select", "insert", "update", "delete")
    ]
