"""A scripted OpenAI-compatible /v1/embeddings server on 127.0.0.1 (real HTTP, own thread).

It runs on a thread of its own, not the test's event loop: the remote backend's calls block
(on the model threads, or on the test's thread when it loads the model).
"""

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass
class Answer:
    """One scripted answer: a status, headers and a raw body (None: the vectors)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    gate: threading.Event | None = None  # when set, the answer waits until the test opens it
    drip_seconds: float = 0.0  # the body is sent a byte at a time, this long apart


@dataclass
class Received:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


def stub_vector(text: str, dimensions: int) -> list[float]:
    """The stub's vector of `text`: not unit length, so normalisation shows."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return (np.random.default_rng(seed).standard_normal(dimensions) * 3).tolist()


class EmbeddingsStub:
    """Answers each POST with the next scripted Answer, else with the texts' vectors, listed
    in reverse order with their `index` (clients must sort by it). A request with a text
    holding one of `refused` is answered 400, as a model refuses a text past its length;
    `standing`, when set, answers every request that is not refused."""

    def __init__(self, dimensions: int = 24) -> None:
        self.dimensions = dimensions
        self.received: list[Received] = []
        self.script: deque[Answer] = deque()
        self.refused: set[str] = set()
        self.standing: Answer | None = None
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length)) if length else {}
                with stub._lock:
                    stub.received.append(
                        Received(self.path, dict(self.headers.items()), body, time.monotonic())
                    )
                    answer = stub.next_answer(body)
                if answer.gate is not None:
                    answer.gate.wait(timeout=30)
                payload = (
                    answer.body if answer.body is not None else json.dumps(stub.vectors(body))
                ).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    if answer.drip_seconds:
                        for index in range(len(payload)):
                            self.wfile.write(payload[index : index + 1])
                            self.wfile.flush()
                            time.sleep(answer.drip_seconds)
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The API root to configure: POSTs go to <base_url>/embeddings."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def vectors(self, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to an embeddings request: its inputs' vectors, last first."""
        inputs = body.get("input") or []
        data = [
            {"object": "embedding", "index": i, "embedding": stub_vector(text, self.dimensions)}
            for i, text in enumerate(inputs)
        ]
        return {"object": "list", "model": body.get("model"), "data": data[::-1]}

    def next_answer(self, body: dict[str, Any]) -> Answer:
        """The answer to this request (lock held)."""
        inputs = body.get("input") or []
        if any(word in text for word in self.refused for text in inputs):
            return Answer(
                400,
                {},
                '{"error": {"message": "This model\'s maximum context length is 8192 tokens"}}',
            )
        if self.script:
            return self.script.popleft()
        return self.standing or Answer()

    def answer(self, *answers: Answer) -> None:
        """Queue answers, given in order."""
        with self._lock:
            self.script.extend(answers)

    def inputs(self) -> list[str]:
        """Every text received, in order."""
        return [text for request in self.received for text in request.body.get("input", [])]

    def start(self) -> "EmbeddingsStub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def embeddings_stub(dimensions: int = 24) -> Iterator[EmbeddingsStub]:
    """A running stub, stopped afterwards."""
    stub = EmbeddingsStub(dimensions).start()
    try:
        yield stub
    finally:
        stub.stop()
