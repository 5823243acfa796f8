"""A connection sees and calls only the tools of the groups it asked for (app/mcp/groups.py).

The /mcp endpoint puts the groups of the request's `tools` parameter in the request scope;
this middleware leaves every other tool out of tools/list and answers a call to one with a
tool error that says which group to ask for.
"""

from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, TextContent

from app.mcp.groups import CORE, TOOLS_PARAM

GROUPS_SCOPE_KEY = "engram.tool_groups"


def requested_groups(ctx: ServerRequestContext[Any, Any]) -> frozenset[str]:
    """The groups the request asked for, as the endpoint read them; core when it did not."""
    scope = getattr(ctx.request, "scope", None) or {}
    groups: frozenset[str] = scope.get("state", {}).get(GROUPS_SCOPE_KEY, frozenset({CORE}))
    return groups


class ServeRequestedGroups:
    """Server middleware: tools/list and tools/call limited to the requested groups."""

    def __init__(self, group_of: Mapping[str, str]) -> None:
        self.group_of = dict(group_of)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        groups = requested_groups(ctx)
        if ctx.method == "tools/call" and ctx.params is not None:
            name = str(ctx.params.get("name"))
            group = self.group_of.get(name)
            if group is not None and group not in groups:
                asked = ",".join(sorted(groups | {group}))
                text = (
                    f"{name} is in the tool group '{group}', which this connection did not "
                    f"ask for; connect with ?{TOOLS_PARAM}={asked} (engram mcp "
                    f"--{TOOLS_PARAM} {asked})"
                )
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        result = await call_next(ctx)
        if ctx.method == "tools/list" and isinstance(result, dict):
            result = {
                **result,
                "tools": [
                    tool
                    for tool in result.get("tools", [])
                    if self.group_of.get(tool.get("name")) in groups
                ],
            }
        return result
