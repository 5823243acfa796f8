"""A scripted OpenAI-compatible /v1/chat/completions server on 127.0.0.1 (real HTTP)."""

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_BODY = 10 * 1024 * 1024


@dataclass
class Reply:
    """One scripted answer: the assistant text, or a raw status/body, after an optional delay."""

    content: str | None = None
    status: int = 200
    body: str | bytes | None = None
    delay: float = 0.0
    gate: asyncio.Event | None = None  # when set, the answer waits until the test opens it
    declared: bool = True  # False: no Content-Length, the body ends when the connection does

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if self.body is not None:
            return self.body.encode()
        return json.dumps(
            {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": self.content or ""},
                    }
                ],
            }
        ).encode()


Responder = Callable[[dict[str, Any]], Reply]


class LLMStub:
    """Answers each POST with the next scripted Reply, else with `responder(request)`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.script: deque[Reply] = deque()
        self.responder: Responder | None = None
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    def reply(self, *replies: Reply) -> None:
        """Queue replies, answered in order."""
        self.script.extend(replies)

    def prompts(self) -> list[str]:
        """The user message of every request received."""
        return [m["content"] for r in self.requests for m in r["messages"] if m["role"] == "user"]

    async def start(self) -> "LLMStub":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            headers = {}
            for line in header_lines:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            length = min(int(headers.get("content-length", "0")), MAX_BODY)
            body = json.loads(await reader.readexactly(length)) if length else {}
            self.paths.append(request_line.split(" ")[1])
            self.headers.append(headers)
            self.requests.append(body)
            reply = self.script.popleft() if self.script else self._default(body)
            if reply.delay:
                await asyncio.sleep(reply.delay)
            if reply.gate is not None:
                await reply.gate.wait()
            payload = reply.payload()
            length = f"Content-Length: {len(payload)}\r\n" if reply.declared else ""
            writer.write(
                f"HTTP/1.1 {reply.status} Stub\r\nContent-Type: application/json\r\n"
                f"{length}Connection: close\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _default(self, body: dict[str, Any]) -> Reply:
        if self.responder is not None:
            return self.responder(body)
        return Reply(
            content='{"new_facts": [], "updated_facts": [], "new_rules": [], "confirmations": []}'
        )


def completion(payload: dict[str, Any], *, fenced: bool = True) -> Reply:
    """A reply whose text carries `payload` as JSON, in a ```json fence or bare."""
    text = json.dumps(payload)
    return Reply(
        content=f"Here is the result:\n```json\n{text}\n```"
        if fenced
        else f"Result follows. {text} That is all."
    )


def user_prompt(request: dict[str, Any]) -> str:
    """The user message of one chat-completions request."""
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def episode_ids(prompt: str) -> list[str]:
    """The ids of the episodes a consolidation prompt carries, in order."""
    import re

    return re.findall(r'<episode id="([0-9a-f-]{36})"', prompt)
