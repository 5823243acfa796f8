"""Tool groups: every tool belongs to one, and a connection is served the groups it asks for
(`/mcp?tools=core,runs`, `engram mcp --tools core,runs`); `core` when it asks for none."""

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

CORE = "core"
ALL = "all"
# The query parameter of /mcp that names the groups.
TOOLS_PARAM = "tools"
# Each group and what its tools do, in the order tools/list gives them.
GROUPS: dict[str, str] = {
    CORE: "remember, store, correct, forget, search, recall, context, rule feedback",
    "memories": "batches, listings, a fact's history, rule inversion, delete for good",
    "entities": "people, places and things: create, resolve, merge, list, delete",
    "admin": "jobs (consolidation, cleanup), stats, erasure, export",
    "runs": "task runs, their messages and feedback, lessons from failures",
    "ledger": "multi-agent event ledgers, an agent's context per turn, reflections",
    "working_memory": "a session's scratch state",
    "procedures": "multi-step workflows learned and versioned",
    "arcs": "stories of related events",
    "graph": "links between memories and entities, and the neighbourhood of one",
}


class UnknownGroup(ValueError):
    """A `tools` value names a group that does not exist, or none."""


def parse_groups(raw: str | None) -> frozenset[str]:
    """The groups a comma-separated `tools` value names ('all': every group; none: core)."""
    if raw is None:
        return frozenset({CORE})
    names = {name.strip() for name in raw.split(",")} - {""}
    if not names:
        raise UnknownGroup(f"name at least one group: {describe_groups()}")
    unknown = sorted(names - set(GROUPS) - {ALL})
    if unknown:
        raise UnknownGroup(
            f"unknown tool group {', '.join(map(repr, unknown))}; "
            f"the groups are {describe_groups()}"
        )
    return frozenset(GROUPS) if ALL in names else frozenset(names)


def describe_groups() -> str:
    """'core, memories, ... or all', for error messages."""
    return ", ".join(GROUPS) + f" or {ALL}"


def with_groups(url: str, groups: str) -> str:
    """`url` asking for `groups` (replacing any `tools` it already names)."""
    parts = urlsplit(url)
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key != TOOLS_PARAM
    ]
    query.append((TOOLS_PARAM, groups))
    return urlunsplit(parts._replace(query=urlencode(query, safe=",")))
