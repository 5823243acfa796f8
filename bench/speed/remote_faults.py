"""Recall, context and search latency while a remote embedding model is slow, down or drips
its answers, and how often a second tenant's searches lose their semantic list while the
first tenant's text, which the model refuses, waits in the embedding backlog.

Runs an OpenAI-compatible embeddings endpoint of its own on loopback and an `engram serve`
process (with API keys for tenants t1 and t2) on a fresh data directory, the `openai`
backend pointed at that endpoint with a 5 s request timeout. For each fault (the endpoint's
answer delayed 8 s, its socket closed, its answer sent a byte every 10 ms) it times one
search, one recall and one context of t2. Then t1 stores a text the endpoint refuses with
400 ("maximum context length"), and t2 searches 20 times, half a second apart, while the
backlog runs every 2 s.

    python -m bench.speed.remote_faults
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from bench.quality.embedder_outage import hashed_vector

DIMENSIONS = 384
POISON = "POISON"


class Endpoint:
    """POST /v1/embeddings on 127.0.0.1:`port` in one of the modes: up, delay, drip, down;
    a request with a text holding POISON is answered 400."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.mode = "up"
        self._server: ThreadingHTTPServer | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                inputs = body.get("input") or []
                if any(POISON in text for text in inputs):
                    status, payload = (
                        400,
                        (
                            b'{"error": {"message": "This model\'s maximum '
                            b'context length is 8192 tokens"}}'
                        ),
                    )
                else:
                    data = [
                        {
                            "object": "embedding",
                            "index": i,
                            "embedding": hashed_vector(text, DIMENSIONS),
                        }
                        for i, text in enumerate(inputs)
                    ]
                    status, payload = 200, json.dumps({"object": "list", "data": data}).encode()
                if endpoint.mode == "delay":
                    time.sleep(8)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    if endpoint.mode == "drip":
                        for index in range(len(payload)):
                            self.wfile.write(payload[index : index + 1])
                            self.wfile.flush()
                            time.sleep(0.01)
                    else:
                        self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def set(self, mode: str) -> None:
        """Answer in `mode`; "down" closes the socket."""
        self.mode = mode
        if mode == "down" and self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        elif mode != "down" and self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
            self._server.daemon_threads = True
            threading.Thread(target=self._server.serve_forever, daemon=True).start()


def environment(data_dir: Path, endpoint_port: int) -> dict[str, str]:
    return {
        **os.environ,
        "ENGRAM_DATA_DIR": str(data_dir),
        "ENGRAM_EMBEDDING_BACKEND": "openai",
        "ENGRAM_EMBEDDING_MODEL": "faults-stub",
        "ENGRAM_EMBEDDING_BASE_URL": f"http://127.0.0.1:{endpoint_port}/v1",
        "ENGRAM_EMBEDDING_TIMEOUT_SECONDS": "5",
        "ENGRAM_EMBEDDING_BACKLOG_SECONDS": "2",
        "ENGRAM_LIMITS__REQUESTS_PER_SECOND": "0",
    }


def key(env: dict[str, str], tenant: str) -> str:
    """A new API key of `tenant` (the CLI prints the secret last)."""
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "keys", "create", "--tenant", tenant],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.strip().splitlines()[-1]


async def timed(http: httpx.AsyncClient, path: str, body: dict) -> str:
    """`status, seconds, semantic_skipped` of one request."""
    began = time.monotonic()
    try:
        answer = await http.post(path, json=body, timeout=30)
    except httpx.TimeoutException:
        return "timed out > 30 s"
    took = time.monotonic() - began
    skipped = answer.json().get("semantic_skipped", "-") if answer.status_code == 200 else ""
    return f"{answer.status_code} in {took:5.1f} s {skipped or ''}".rstrip()


async def run(args: argparse.Namespace) -> None:
    endpoint = Endpoint(args.endpoint_port)
    endpoint.set("up")
    work = Path(tempfile.mkdtemp(prefix="engram-faults-"))
    env = environment(work / "data", args.endpoint_port)
    keys = {tenant: key(env, tenant) for tenant in ("t1", "t2")}
    log = (work / "serve.log").open("ab")
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(args.port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as probe:
            for _ in range(360):
                try:
                    if (await probe.get("/readyz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.5)
        clients = {
            tenant: httpx.AsyncClient(
                base_url=base, timeout=30, headers={"Authorization": f"Bearer {secret}"}
            )
            for tenant, secret in keys.items()
        }
        t1, t2 = clients["t1"], clients["t2"]
        await t2.post(
            "/v1/facts",
            json={
                "subject": "Ann",
                "predicate": "moors",
                "content": "Ann moors her boat at the harbour",
            },
        )
        print(f"{'endpoint':<22} {'search':<28} {'recall':<28} {'context':<28}")
        for mode in ("delay", "down", "drip"):
            endpoint.set(mode)
            row = [
                await timed(t2, "/v1/search", {"query": "harbour boat"}),
                await timed(t2, "/v1/recall", {"topic": "harbour boat"}),
                await timed(
                    t2, "/v1/context", {"trigger_prompt": "harbour boat", "butler": "chat"}
                ),
            ]
            print(f"{mode:<22} {row[0]:<28} {row[1]:<28} {row[2]:<28}")
            endpoint.set("up")
            await asyncio.sleep(12)  # past the "failed recently" window
        stored = await t1.post(
            "/v1/episodes",
            json={"content": POISON + " a text past the model's length", "butler": "chat"},
        )
        skipped = 0
        for _ in range(20):
            found = await t2.post("/v1/search", json={"query": "harbour"})
            skipped += found.json().get("semantic_skipped") is not None
            await asyncio.sleep(0.5)
        written = await t2.post(
            "/v1/episodes", json={"content": "Bob baked bread", "butler": "chat"}
        )
        await asyncio.sleep(3)
        backlog = (await t2.get("/readyz")).json().get("embedding_backlog")
        print(
            f"\nt1 stored a refused text ({stored.status_code}); t2's searches without "
            f"their semantic list: {skipped} of 20; t2's write {written.status_code}; "
            f"backlog 3 s later: {backlog} (the refused row counts)"
        )
        for http in clients.values():
            await http.aclose()
    finally:
        server.terminate()
        server.wait(60)
        endpoint.set("down")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8931)
    parser.add_argument("--endpoint-port", type=int, default=8932)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
