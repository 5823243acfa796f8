"""Unknown tool arguments are an error, as unknown fields are in REST request bodies.

The SDK drops arguments a tool does not declare; a misspelt optional argument would then be
silently ignored. This middleware answers such a call with a tool error naming the argument.
"""

from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent


class RejectUnknownArguments:
    """Server middleware: a `tools/call` with an argument the tool does not declare fails."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._declared: dict[str, set[str]] | None = None

    async def declared(self) -> dict[str, set[str]]:
        """Each tool's argument names, read once from the tools' input schemas."""
        if self._declared is None:
            self._declared = {
                tool.name: set(tool.input_schema.get("properties", {}))
                for tool in await self.server.list_tools()
            }
        return self._declared

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params
        if ctx.method == "tools/call" and params is not None:
            arguments = params.get("arguments")
            accepted = (await self.declared()).get(str(params.get("name")))
            if isinstance(arguments, Mapping) and accepted is not None:
                unknown = sorted(set(arguments) - accepted)
                if unknown:
                    names = ", ".join(unknown)
                    text = (
                        f"Invalid value for: {names}\n- {names}: unknown argument; this tool "
                        f"takes {', '.join(sorted(accepted)) or 'no arguments'}"
                    )
                    return CallToolResult(
                        content=[TextContent(type="text", text=text)], is_error=True
                    )
        return await call_next(ctx)
