"""`engram mcp`: an MCP server on stdin/stdout that forwards every call to a running Engram.

Desktop hosts (Claude Desktop, Cursor, ...) start MCP servers as subprocesses speaking stdio.
This bridge connects once to the service's /mcp endpoint with the SDK's client and the API
key, then lists and calls the remote tools on the host's behalf, so the tools, their
validation and the tenant are exactly those of the service.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

API_KEY_ENV = "ENGRAM_API_KEY"


@asynccontextmanager
async def remote_client(url: str, api_key: str | None) -> AsyncIterator[Client]:
    """An SDK client session with the service's /mcp endpoint, sending the key as Bearer."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def forwarding_server(remote: Client) -> Server[Any]:
    """A low-level MCP server whose tools are the remote service's."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return await remote.list_tools(cursor=params.cursor if params else None)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        return await remote.call_tool(params.name, params.arguments)

    info = remote.server_info
    return Server(
        info.name if info else "engram",
        version=info.version if info else "",
        instructions=remote.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def run_bridge(url: str, api_key: str | None) -> None:
    """Serve MCP on stdio, forwarding to `url`, until the host closes stdin."""
    async with remote_client(url, api_key) as remote:
        server = forwarding_server(remote)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def root_cause(error: BaseException) -> BaseException:
    """The first leaf of an exception group (how the SDK's task groups report failures)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
