"""The MCP tools, one module per domain, each declaring its `tools` (app/mcp/toolset.py)."""

from app.mcp.tools import (
    arcs,
    data_rights,
    entities,
    episodes,
    facts,
    graph,
    jobs,
    ledger,
    links,
    memories,
    procedures,
    rules,
    runs,
    search,
    stats,
    working_memory,
)

# tools/list gives the tools of these modules in this order within each group, and the groups
# in the order of GROUPS.
TOOL_MODULES = (
    episodes,
    facts,
    rules,
    memories,
    search,
    stats,
    entities,
    jobs,
    data_rights,
    runs,
    ledger,
    working_memory,
    procedures,
    arcs,
    links,
    graph,
)
