"""Who may reach what: API keys (app/services/api_keys.py, `engram keys` in app/cli.py), keys
limited to butlers (app/services/butler_limits.py), read-only keys, tenant isolation and
row-level security (app/core/rls.py, app/core/scope.py, app/deps.py)."""
