"""What text no other request should wait for costs the event loop: one Thai letter carrying
tens of thousands of combining marks (segmented for the keyword index), and a 60 MB answer
from the rerank endpoint.

Segmentation is timed in this process (the checkout on PYTHONPATH) at 10k / 50k / 200k marks.
Then, against a running server started with this script's rerank endpoint as its reranker,
`/healthz` is asked every 10 ms while (1) a batch of `--batch` texts of 50,000 marks is
stored and (2) one search gets a 60 MB rerank answer under an 800 ms budget:

    ENGRAM_RERANKER__KIND=endpoint ENGRAM_RERANKER__BASE_URL=http://127.0.0.1:8799 \\
    ENGRAM_RERANKER__TIMEOUT_MS=800 ENGRAM_LIMITS__REQUESTS_PER_SECOND=0 \\
        engram serve --no-auth --port 8798 &
    python -m bench.speed.segmentation_stall --base-url http://127.0.0.1:8798 --stub-port 8799
"""

import argparse
import asyncio
import threading
import time
import uuid
from collections.abc import Awaitable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from app.core.languages import segment

MARK = "\u0e49"  # a Thai tone mark
ANSWER_BYTES = 60_000_000


def marked(count: int) -> str:
    """A Thai letter carrying `count` tone marks."""
    return "ร" + MARK * count


def segmentation_seconds(count: int, tries: int = 3) -> float:
    """The best of `tries` segmentations of a letter with `count` marks."""
    text = marked(count)
    best = float("inf")
    for _ in range(tries):
        began = time.perf_counter()
        segment(text)
        best = min(best, time.perf_counter() - began)
    return best


def huge_answer(documents: int) -> bytes:
    """About 60 MB of valid rerank results, over and over."""
    once = ", ".join(f'{{"index": {i}, "relevance_score": {i}}}' for i in range(documents))
    return ('{"results": [' + ", ".join([once] * (ANSWER_BYTES // len(once))) + "]}").encode()


def serve_huge_answers(port: int) -> ThreadingHTTPServer:
    """POST /rerank on 127.0.0.1:`port`, answering about 60 MB to every request."""
    import json

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            payload = huge_answer(len(body.get("documents", [])) or 1)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the caller stopped reading

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def stall_during(http: httpx.AsyncClient, work: Awaitable[Any]) -> tuple[float, float, Any]:
    """The slowest `/healthz` (ms) asked every 10 ms while `work` runs, the work's own
    seconds, and its result."""
    task = asyncio.ensure_future(work)
    began = time.perf_counter()
    slowest = 0.0
    while not task.done():
        asked = time.perf_counter()
        (await http.get("/healthz")).raise_for_status()
        slowest = max(slowest, time.perf_counter() - asked)
        await asyncio.sleep(0.01)
    result = await task
    return slowest * 1000, time.perf_counter() - began, result


async def run(args: argparse.Namespace) -> None:
    print("| combining marks on one letter | segmentation, ms (best of 3) |")
    print("|---|---|")
    for count in (10_000, 50_000, 200_000):
        print(f"| {count:,} | {segmentation_seconds(count) * 1000:.1f} |")
    stub = serve_huge_answers(args.stub_port)
    butler = f"stall-{uuid.uuid4().hex[:8]}"
    async with (
        httpx.AsyncClient(base_url=args.base_url, timeout=600) as http,
        httpx.AsyncClient(base_url=args.base_url, timeout=600) as probe,
    ):
        items = [{"content": marked(49_999), "butler": butler}] * args.batch
        stall, seconds, response = await stall_during(
            probe, http.post("/v1/episodes/batch", json={"items": items})
        )
        response.raise_for_status()
        print("\n| while ... | slowest /healthz, ms | the request, s | answer |")
        print("|---|---|---|---|")
        print(
            f"| a batch of {args.batch} x 50,000 marks is stored | {stall:.0f} | "
            f"{seconds:.2f} | {response.status_code} |"
        )
        garden = [
            {"content": f"The garden note number {i} about tomatoes", "butler": butler}
            for i in range(5)
        ]
        (await http.post("/v1/episodes/batch", json={"items": garden})).raise_for_status()
        stall, seconds, response = await stall_during(
            probe,
            http.post(
                "/v1/search",
                json={"query": "tomatoes in the garden", "scope": butler, "mode": "keyword"},
            ),
        )
        response.raise_for_status()
        print(
            f"| a search gets a 60 MB rerank answer (budget 800 ms) | {stall:.0f} | "
            f"{seconds:.2f} | reranker {response.json()['reranker']} |"
        )
    stub.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8798")
    parser.add_argument("--stub-port", type=int, default=8799)
    parser.add_argument("--batch", type=int, default=100)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
