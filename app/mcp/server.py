"""The MCP server: the memory tools an agent uses every turn (the core group) and, in groups
asked for by name, the tools for everything else an agent does over REST, served over
Streamable HTTP inside the FastAPI app."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.routing import Route

from app.core.config import Settings
from app.mcp.aliases import AcceptOldNames
from app.mcp.endpoint import McpEndpoint
from app.mcp.groups import GROUPS
from app.mcp.served_groups import ServeRequestedGroups
from app.mcp.strict_arguments import RejectUnknownArguments
from app.mcp.tools import TOOL_MODULES
from app.mcp.toolset import register

MCP_PATH = "/mcp"
INSTRUCTIONS = (
    """Engram is your long-term memory. Store what you observe as episodes, durable
knowledge as facts (subject / predicate / content) and behavioural guidance as rules. Before a
task, call memory_context or memory_recall; look things up with memory_search. Give feedback on
rules you applied (memory_mark_helpful / memory_mark_harmful), confirm facts that still hold
and contradict (memory_contradict) those the evidence goes against; to correct a fact, store
the new one (it supersedes the old).
These are the core tools. More come in groups, asked for by name in the endpoint's URL
(/mcp?tools=core,runs) or with engram mcp --tools core,runs, or all of them with tools=all:
"""
    + "\n".join(f"- {name}: {holds}" for name, holds in GROUPS.items() if name != "core")
    + """
Results are JSON: ids are UUID strings, times ISO 8601."""
)

LOG_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


def tool_groups() -> dict[str, str]:
    """Each tool's name and the group it belongs to."""
    return {tool.name: tool.group for module in TOOL_MODULES for tool in module.tools.tools}


def build_server(version: str, log_level: str = "info") -> MCPServer:
    """An MCP server with every Engram tool registered.

    The SDK calls logging.basicConfig when a server is built (a no-op once `engram` has
    configured logging); it is given the service's own level.
    """
    level = log_level.upper() if log_level.upper() in LOG_LEVELS else "INFO"
    server: MCPServer = MCPServer(
        "engram",
        version=version,
        instructions=INSTRUCTIONS,
        log_level=level,  # type: ignore[arg-type]
    )
    register(server, [module.tools for module in TOOL_MODULES])
    server.middleware.append(AcceptOldNames())
    server.middleware.append(ServeRequestedGroups(tool_groups()))
    server.middleware.append(RejectUnknownArguments(server))
    return server


class McpMount:
    """The /mcp route of the app and the lifespan of its session manager."""

    def __init__(self, settings: Settings, version: str) -> None:
        self.server = build_server(version, settings.log_level)
        # Stateless JSON: every POST stands alone, so any worker process or replica can
        # answer it, and no session state outlives a request. DNS-rebinding protection
        # (Host/Origin checks) is on when the service listens on a loopback address.
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            host=settings.host,
            max_request_body_size=settings.max_body_bytes,
        )
        self.session_manager: StreamableHTTPSessionManager = self.server.session_manager
        self.route = Route(
            MCP_PATH, McpEndpoint(self.session_manager), methods=["GET", "POST", "DELETE"]
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the session manager for the life of the app.

        The manager holds an anyio task group, which must be entered and left by one task; a
        lifespan may be entered and left by different tasks (pytest-asyncio fixtures do), so
        the manager runs in a task of its own, from here until the lifespan ends.
        """
        started, stop = asyncio.Event(), asyncio.Event()

        async def serve() -> None:
            async with self.session_manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(serve(), name="mcp-session-manager")
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task.done():
            task.result()  # raises what stopped it
        try:
            yield
        finally:
            stop.set()
            await task
