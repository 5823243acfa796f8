"""A module's MCP tools, declared at module level and added to a server in one call."""

from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

ToolFn = TypeVar("ToolFn", bound=Callable[..., Any])


class ToolSet:
    """The tools of one module, in the order they are declared."""

    def __init__(self) -> None:
        self._tools: list[tuple[Callable[..., Any], ToolAnnotations | None]] = []

    def add(self, annotations: ToolAnnotations | None = None) -> Callable[[ToolFn], ToolFn]:
        """Declare the decorated function a tool; its name and docstring are the tool's."""
        def declare(fn: ToolFn) -> ToolFn:
            self._tools.append((fn, annotations))
            return fn
        return declare

    def register(self, server: MCPServer) -> None:
        """Add every tool of this set to `server`."""
        for fn, annotations in self._tools:
            server.tool(annotations=annotations)(fn)
