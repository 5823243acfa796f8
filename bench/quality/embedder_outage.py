"""Writes while a remote embedding model is down, then failing one request in three: is every
write acknowledged, does every memory get its vectors soon after the model recovers, and does
a restart in the middle lose nothing?

The script runs an OpenAI-compatible embeddings endpoint of its own on loopback (vectors of
`--dimensions` drawn from a hash of each text) and an `engram serve` process of its own on a
fresh data directory, with the `openai` backend pointed at that endpoint. One writer stores
an episode every `1 / --rate` seconds throughout, retrying one only while the server itself is
being restarted. The phases:
1. `--warm` seconds with the endpoint answering;
2. `--down` seconds with the endpoint not listening; the server is restarted half way;
3. the endpoint answering until the embedding backlog (`/readyz`) is empty;
4. `--flaky` seconds with every third request to the endpoint answered 503;
5. the endpoint answering until the backlog is empty.
Then every stored episode is counted, and each one's own text must find it first in a
semantic search (it has its vectors).

    python -m bench.quality.embedder_outage --down 300 --flaky 600
"""

import argparse
import asyncio
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np

from bench.common.texts import sentence


def hashed_vector(text: str, dimensions: int) -> list[float]:
    """A fixed vector for `text`."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return np.random.default_rng(seed).standard_normal(dimensions).tolist()


class Endpoint:
    """POST /v1/embeddings on 127.0.0.1:`port`; `down()` closes the socket, `flaky()` answers
    every third request 503, `up()` answers every request."""

    def __init__(self, port: int, dimensions: int) -> None:
        self.port = port
        self.dimensions = dimensions
        self.flaky_mode = False
        self.requests = 0
        self.failed = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                with endpoint._lock:
                    endpoint.requests += 1
                    fail = endpoint.flaky_mode and endpoint.requests % 3 == 0
                    endpoint.failed += fail
                if fail:
                    status, payload = 503, b'{"error": "overloaded"}'
                else:
                    data = [
                        {
                            "object": "embedding",
                            "index": i,
                            "embedding": hashed_vector(text, endpoint.dimensions),
                        }
                        for i, text in enumerate(body.get("input") or [])
                    ]
                    status, payload = 200, json.dumps({"object": "list", "data": data}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if fail:
                    self.send_header("Retry-After", "1")
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def up(self) -> None:
        """Answer every request (listening again if down)."""
        self.flaky_mode = False
        if self._server is None:
            self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
            self._server.daemon_threads = True
            threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def down(self) -> None:
        """Stop listening: connections are refused."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def flaky(self) -> None:
        """Answer, but every third request with 503 and Retry-After: 1."""
        self.up()
        self.flaky_mode = True


class Server:
    """`engram serve` on a data directory of its own, started and restarted by the script."""

    def __init__(self, data_dir: Path, port: int, endpoint_port: int, log: Path) -> None:
        self.base_url = f"http://127.0.0.1:{port}"
        self.port = port
        self.log = log
        self.env = {
            **os.environ,
            "ENGRAM_DATA_DIR": str(data_dir),
            "ENGRAM_EMBEDDING_BACKEND": "openai",
            "ENGRAM_EMBEDDING_MODEL": "outage-stub",
            "ENGRAM_EMBEDDING_BASE_URL": f"http://127.0.0.1:{endpoint_port}/v1",
            "ENGRAM_LIMITS__REQUESTS_PER_SECOND": "0",
        }
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> float:
        """Start and wait for /readyz; seconds it took."""
        began = time.monotonic()
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "serve", "--no-auth", "--port", str(self.port)],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        async with httpx.AsyncClient(timeout=2) as http:
            while time.monotonic() - began < 180:
                if self.process.poll() is not None:
                    raise RuntimeError(f"engram serve exited; see {self.log}")
                try:
                    if (await http.get(f"{self.base_url}/readyz")).status_code == 200:
                        return time.monotonic() - began
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.5)
        raise RuntimeError("engram serve was not ready within 180 s")

    async def stop(self) -> None:
        """Interrupt it (as Ctrl-C does) and wait for the process to end."""
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            await asyncio.to_thread(self.process.wait, 120)
            self.process = None


@dataclass
class Tally:
    """What the writer saw, per phase."""

    phase: str = "warm"
    stored: dict[str, str] = field(default_factory=dict)  # id -> content
    acknowledged: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    slowest: dict[str, float] = field(default_factory=dict)
    restarting: bool = False


async def writer(
    http: httpx.AsyncClient, tally: Tally, butler: str, rate: float, stop: asyncio.Event
) -> None:
    """One episode every 1 / `rate` seconds until `stop`; each retried only while the server
    is being restarted by the script."""
    rng = random.Random(11)
    index = 0
    while not stop.is_set():
        began = time.monotonic()
        content = f"{sentence(rng)} (note {index})"
        index += 1
        while True:
            try:
                response = await http.post(
                    "/v1/episodes", json={"content": content, "butler": butler}
                )
            except httpx.TransportError:
                if tally.restarting:
                    await asyncio.sleep(0.2)
                    continue
                raise
            phase = tally.phase
            if response.status_code == 201:
                tally.stored[response.json()["id"]] = content
                tally.acknowledged[phase] = tally.acknowledged.get(phase, 0) + 1
                tally.slowest[phase] = max(tally.slowest.get(phase, 0.0), time.monotonic() - began)
            else:
                tally.refused[phase] = tally.refused.get(phase, 0) + 1
                print(f"refused in {phase}: {response.status_code} {response.text[:200]}")
            break
        await asyncio.sleep(max(0.0, 1 / rate - (time.monotonic() - began)))


async def backlog(http: httpx.AsyncClient) -> int | None:
    """The embedding backlog /readyz reports, None while the server does not answer."""
    try:
        return int((await http.get("/readyz")).json()["embedding_backlog"] or 0)
    except (httpx.TransportError, ValueError, KeyError):
        return None


async def drained(http: httpx.AsyncClient, bound: float) -> tuple[float, int]:
    """Seconds until the backlog is empty (or `bound`), and the largest backlog seen."""
    began = time.monotonic()
    largest = 0
    while time.monotonic() - began < bound:
        waiting = await backlog(http)
        largest = max(largest, waiting or 0)
        if waiting == 0:
            return time.monotonic() - began, largest
        await asyncio.sleep(0.5)
    return float("inf"), largest


async def run(args: argparse.Namespace) -> None:
    endpoint = Endpoint(args.endpoint_port, args.dimensions)
    endpoint.up()
    work = Path(tempfile.mkdtemp(prefix="engram-outage-"))
    server = Server(work / "data", args.port, args.endpoint_port, work / "serve.log")
    print(f"data and log: {work}")
    first_start = await server.start()
    tally = Tally()
    butler = f"outage-{uuid.uuid4().hex[:6]}"
    rows: list[tuple[str, float, str]] = []
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=120) as http:
        writing = asyncio.create_task(writer(http, tally, butler, args.rate, stop))
        await asyncio.sleep(args.warm)

        tally.phase = "down"
        endpoint.down()
        await asyncio.sleep(args.down / 2)
        before_restart = await backlog(http)
        tally.restarting = True
        await server.stop()
        restart = await server.start()
        tally.restarting = False
        after_restart = await backlog(http)
        rows.append(
            (
                "restart while down",
                restart,
                f"backlog {before_restart} before, {after_restart} after",
            )
        )
        await asyncio.sleep(args.down / 2)

        tally.phase = "recovered"
        endpoint.up()
        took, largest = await drained(http, args.bound)
        rows.append(
            ("backlog empty after the endpoint is back", took, f"largest backlog {largest}")
        )

        tally.phase = "flaky"
        failed_before = endpoint.failed
        endpoint.flaky()
        await asyncio.sleep(args.flaky)
        backlog_at_end = await backlog(http)
        tally.phase = "recovered again"
        endpoint.up()
        took, largest = await drained(http, args.bound)
        rows.append(
            (
                "backlog empty after one-in-three failures end",
                took,
                f"backlog {backlog_at_end} when they ended; "
                f"{endpoint.failed - failed_before} requests answered 503",
            )
        )
        stop.set()
        await writing

        stats = (await http.get("/v1/stats", params={"scope": butler})).json()
        rng = random.Random(5)
        sample = rng.sample(sorted(tally.stored.items()), min(args.sample, len(tally.stored)))
        misses = 0
        for memory_id, content in sample:
            found = (
                await http.post(
                    "/v1/search",
                    json={"query": content, "mode": "semantic", "scope": butler, "limit": 1},
                )
            ).json()
            misses += [r["id"] for r in found["results"]] != [memory_id]
    await server.stop()
    endpoint.down()

    print(
        f"\nfirst start {first_start:.1f} s; {args.rate:g} writes a second; endpoint down "
        f"{args.down} s, then failing one request in three for {args.flaky} s\n"
    )
    print("| phase | writes acknowledged | writes refused | slowest write, s |")
    print("|---|---|---|---|")
    for phase in ("warm", "down", "recovered", "flaky", "recovered again"):
        print(
            f"| {phase} | {tally.acknowledged.get(phase, 0)} | {tally.refused.get(phase, 0)} "
            f"| {tally.slowest.get(phase, 0.0):.2f} |"
        )
    print("\n| event | seconds | notes |\n|---|---|---|")
    for event, seconds, note in rows:
        print(f"| {event} | {seconds:.1f} | {note} |")
    print(
        f"\nepisodes acknowledged {len(tally.stored)}, stored (`/v1/stats`) "
        f"{stats['episodes']['total']}; of {len(sample)} sampled, {misses} not found first "
        f"by a semantic search of their own text"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8798)
    parser.add_argument("--endpoint-port", type=int, default=8799)
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--rate", type=float, default=2.0, help="writes a second")
    parser.add_argument("--warm", type=float, default=20)
    parser.add_argument("--down", type=float, default=300)
    parser.add_argument("--flaky", type=float, default=600)
    parser.add_argument(
        "--bound", type=float, default=900, help="the longest wait for the backlog to empty"
    )
    parser.add_argument("--sample", type=int, default=200)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
