"""What every floor uses: settings, errors, shared constants, tenancy and row-level security,
the clock, credentials, text and language helpers, periodic tasks, outbound HTTP and the base
of every ASGI middleware."""
