"""Hooks that give coding agents Engram memory: `engram-hook <event>` and `engram-hook install`
(also `engram hook <event>` and `engram hooks install` where the server is installed).

Only the standard library and httpx: a hook runs on every prompt, so it imports neither the
client's models nor any of the service; it talks to a running Engram over HTTP.
"""
