"""What the service's pure ASGI middlewares share: HTTP only, and whether an answer began."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HttpMiddleware:
    """A middleware that handles the HTTP requests it `applies` to and passes anything else
    (lifespan, websockets) straight to the app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def applies(self, scope: Scope) -> bool:
        """Whether `handle` takes this request; by default every HTTP request."""
        return scope["type"] == "http"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.applies(scope):
            await self.handle(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one HTTP request."""
        raise NotImplementedError

    async def answered(
        self, scope: Scope, receive: Receive, send: Send, failure: type[Exception]
    ) -> bool:
        """Run the app: False when it raised `failure` before its answer started (the
        caller answers instead), True when it answered. After the start, `failure` propagates."""
        tracked = TrackedSend(send)
        try:
            await self.app(scope, receive, tracked)
        except failure:
            if tracked.started:
                raise
            return False
        return True


class TrackedSend:
    """`send`, noting whether the answer has started (after which it cannot be replaced)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self._send(message)
