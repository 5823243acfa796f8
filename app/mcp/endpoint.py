"""The /mcp endpoint: authenticate like REST, read the tool groups asked for, then hand the
request to the MCP transport."""

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from app.core.credentials import CHALLENGE, api_key_of
from app.core.errors import Unauthorized, problem_response
from app.deps import caller_for_key
from app.mcp.calls import ACTOR_SCOPE_KEY, TENANT_SCOPE_KEY
from app.mcp.groups import TOOLS_PARAM, UnknownGroup, parse_groups
from app.mcp.served_groups import GROUPS_SCOPE_KEY


class McpEndpoint:
    """ASGI app of the /mcp route.

    A request without a valid key gets the same 401 problem as REST before any MCP handling,
    one naming an unknown tool group a 400; otherwise its tenant, actor and tool groups are put
    in the request scope, where each tool call and tools/list read them.
    """

    def __init__(self, session_manager: StreamableHTTPSessionManager) -> None:
        self.session_manager = session_manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        try:
            caller = await caller_for_key(request.app.state, api_key_of(scope["headers"]))
        except Unauthorized as error:
            response = problem_response(error.status_code, error.title, error.detail, request)
            response.headers["WWW-Authenticate"] = CHALLENGE
            await response(scope, receive, send)
            return
        if not caller.can_write:
            # Tools store, correct and forget as much as they read: no read-only key here.
            refused = problem_response(
                403,
                "Forbidden",
                "this API key is read-only; MCP needs a key that may write",
                request,
            )
            await refused(scope, receive, send)
            return
        asked = request.query_params.getlist(TOOLS_PARAM)
        try:
            groups = parse_groups(",".join(asked) if asked else None)
        except UnknownGroup as error:
            invalid = problem_response(
                400,
                "Bad request",
                f"{TOOLS_PARAM}: {error}",
                request,
                errors=[{"field": f"query.{TOOLS_PARAM}", "message": str(error)}],
            )
            await invalid(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state[GROUPS_SCOPE_KEY] = groups
        state[TENANT_SCOPE_KEY] = caller.tenant_id
        state[ACTOR_SCOPE_KEY] = caller.actor
        await self.session_manager.handle_request(scope, receive, send)
