"""Values and value types every layer shares; it imports nothing of ours, so any layer may
import it."""

from typing import Literal

SECONDS_PER_DAY = 86_400.0
SECONDS_PER_HOUR = 3_600.0
# Session ids are the callers' own strings (a UUID, a framework's thread id), this long at most.
MAX_SESSION_ID_CHARS = 200

SearchMode = Literal["semantic", "keyword", "hybrid"]
Fusion = Literal["learned", "rrf", "weighted"]

# The scope of facts, rules and arcs every butler shares.
GLOBAL_SCOPE = "global"
