"""The MCP server: the 19 memory tools and the tools for everything else an agent does over
REST (jobs, data rights, listings, runs, ledgers, working memory, procedures, arcs, links and
the graph), served over Streamable HTTP inside the FastAPI app."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.routing import Route

from app.config import Settings
from app.mcp import (
    arc_tools,
    data_rights_tools,
    entity_tools,
    episode_tools,
    fact_tools,
    graph_tools,
    job_tools,
    ledger_tools,
    link_tools,
    memory_tools,
    procedure_tools,
    rule_tools,
    run_tools,
    search_tools,
    stats_tools,
    working_memory_tools,
)
from app.mcp.endpoint import McpEndpoint
from app.mcp.strict_arguments import RejectUnknownArguments

MCP_PATH = "/mcp"
INSTRUCTIONS = """Engram is your long-term memory. Store what you observe as episodes, durable
knowledge as facts (subject / predicate / content) and behavioural guidance as rules. Before a
task, call memory_context or memory_recall; look things up with memory_search. Give feedback on
rules you applied (memory_mark_helpful / memory_mark_harmful), confirm facts that still hold
and contradict (memory_contradict) those the evidence goes against.
Jobs you queue (consolidation, cleanup, memory_erase) run in the background: follow one with
job_get, or list recent ones with job_list. When the user wants data gone for good, use
memory_delete, entity_delete or run_delete (one item) or memory_erase (by selector);
memory_export pages through everything stored.
Record task runs with run_create, run_log_messages, run_finish and run_add_feedback; before
planning a task ask run_search with success=false for similar past failures. In a multi-agent
ledger, append events with agent_event_append and start each turn with agent_context.
Keep a session's scratch state in working memory (working_memory_get / working_memory_set /
working_memory_patch, scratchpad_set). Store multi-step workflows you learn with
procedure_store, find them with procedure_search and report outcomes with
procedure_record_execution. Follow a story of related events with arc_create,
arc_add_event and arc_close. Link memories with link_create and explore what is connected
to a memory or entity with graph_neighbourhood.
Results are JSON: ids are UUID strings, times ISO 8601."""

# The tool modules, one per domain; tools/list gives their tools in this order.
TOOL_MODULES = (episode_tools, fact_tools, rule_tools, memory_tools, search_tools, stats_tools,
                entity_tools, job_tools, data_rights_tools, run_tools, ledger_tools,
                working_memory_tools, procedure_tools, arc_tools, link_tools, graph_tools)

LOG_LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}


def build_server(version: str, log_level: str = "info") -> MCPServer:
    """An MCP server with every Engram tool registered.

    The SDK calls logging.basicConfig when a server is built (a no-op once `engram` has
    configured logging); it is given the service's own level.
    """
    level = log_level.upper() if log_level.upper() in LOG_LEVELS else "INFO"
    server: MCPServer = MCPServer("engram", version=version, instructions=INSTRUCTIONS,
                                  log_level=level)  # type: ignore[arg-type]
    for module in TOOL_MODULES:
        module.tools.register(server)
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
            stateless_http=True, json_response=True, host=settings.host,
            max_request_body_size=settings.max_body_bytes)
        self.session_manager: StreamableHTTPSessionManager = self.server.session_manager
        self.route = Route(MCP_PATH, McpEndpoint(self.session_manager),
                           methods=["GET", "POST", "DELETE"])

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
