"""Hooks that give coding agents Engram memory: `engram hook <event>` and `engram hooks`.

Only the standard library and httpx: a hook runs on every prompt, so it never imports the
service (its settings, models or database code); it talks to a running Engram over HTTP.
"""
