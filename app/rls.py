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
and `disable_tenant_rls(op, "table")` in `downgrade()`; `tests/test_rls.py` fails for a
tenant table without the policy.
"""

from typing import Any

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
