"""The HTTP edge: app/web/ (middleware, hosts, ratelimit, docs), errors (app/core/errors.py),
health (app/services/health.py), metrics (app/telemetry/metrics.py), the start-up log."""
