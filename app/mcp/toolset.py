"""A module's MCP tools, declared at module level, each in a group, and added to a server."""

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from app.mcp.groups import GROUPS

ToolFn = TypeVar("ToolFn", bound=Callable[..., Any])


@dataclass(frozen=True)
class Tool:
    """One declared tool: its function (name and docstring), hints and group."""

    fn: Callable[..., Any]
    annotations: ToolAnnotations | None
    group: str

    @property
    def name(self) -> str:
        return self.fn.__name__


class ToolSet:
    """The tools of one module, in the order they are declared, each in the set's group or
    the one its declaration names."""

    def __init__(self, group: str) -> None:
        self.group = _known(group)
        self.tools: list[Tool] = []

    def add(
        self, annotations: ToolAnnotations | None = None, *, group: str | None = None
    ) -> Callable[[ToolFn], ToolFn]:
        """Declare the decorated function a tool; its name and docstring are the tool's."""

        def declare(fn: ToolFn) -> ToolFn:
            self.tools.append(Tool(fn, annotations, _known(group or self.group)))
            return fn

        return declare


def register(server: MCPServer, sets: Iterable[ToolSet]) -> None:
    """Add the tools of `sets` to `server`, group by group in the order of GROUPS, the tools
    of a group in the order of `sets` and of their declarations."""
    order = list(GROUPS)
    tools = sorted(
        (tool for toolset in sets for tool in toolset.tools),
        key=lambda tool: order.index(tool.group),
    )
    for tool in tools:
        server.tool(annotations=tool.annotations, description=inspect.getdoc(tool.fn))(tool.fn)


def _known(group: str) -> str:
    if group not in GROUPS:
        raise ValueError(f"unknown tool group {group!r}")
    return group
