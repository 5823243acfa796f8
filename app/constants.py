"""Values every layer shares; this module imports nothing, so any layer may import it."""

SECONDS_PER_DAY = 86_400.0
# Session ids are the callers' own strings (a UUID, a framework's thread id), this long at most.
MAX_SESSION_ID_CHARS = 200
