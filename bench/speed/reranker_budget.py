"""A reranker the operator brings: its order is served, and a hung one costs no more than its
time budget.

The script runs a rerank endpoint of its own on loopback (Cohere's shape) that scores each
document by a hash of its text, so its order differs from the fused one, and that can be told
to hang. Start Engram pointed at it, then run the script:

    ENGRAM_RERANKER__KIND=endpoint ENGRAM_RERANKER__BASE_URL=http://127.0.0.1:8797 \
    ENGRAM_RERANKER__TIMEOUT_MS=200 ENGRAM_LIMITS__REQUESTS_PER_SECOND=0 \
        engram serve --no-auth --port 8796 &
    python -m bench.speed.reranker_budget --base-url http://127.0.0.1:8796 --stub-port 8797 \
        --budget-ms 200

After `--episodes` stored sentences and `--warm` searches, each question is asked three ways
in turn, one search at a time:
1. `rerank: false`: the fused order, the floor;
2. the endpoint answering: the search must be served in the endpoint's order;
3. the endpoint hung: the search must be served in the fused order (1's), saying the reranker
   was skipped, within the budget plus the fused search's own time.
"""

import argparse
import asyncio
import hashlib
import json
import random
import statistics
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from bench.common.texts import question, sentence


def stub_score(text: str) -> float:
    """The endpoint's score of a document: a hash of its text, in [0, 1)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") / 2**32


class RerankEndpoint:
    """POST /rerank in Cohere's shape on 127.0.0.1; after `hang()` each answer is held until
    `answer()`."""

    def __init__(self, port: int) -> None:
        self.release = threading.Event()
        self.release.set()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                endpoint.release.wait(timeout=120)
                results = [
                    {"index": i, "relevance_score": stub_score(text)}
                    for i, text in enumerate(body.get("documents", []))
                ]
                payload = json.dumps({"results": results}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the caller gave up on a hung answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hang(self) -> None:
        """Hold every answer from now on."""
        self.release.clear()

    def answer(self) -> None:
        """Answer again, the held requests too."""
        self.release.set()


def milliseconds(samples: list[float]) -> str:
    """p50 / p95 / max in ms."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered) * 1000:.1f} / {p95 * 1000:.1f} / {ordered[-1] * 1000:.1f}"


async def search(
    http: httpx.AsyncClient, query: str, butler: str, rerank: bool
) -> tuple[float, dict[str, Any]]:
    """Seconds and body of one hybrid search."""
    began = time.perf_counter()
    response = await http.post(
        "/v1/search", json={"query": query, "limit": 10, "scope": butler, "rerank": rerank}
    )
    elapsed = time.perf_counter() - began
    response.raise_for_status()
    return elapsed, response.json()


def ids(body: dict[str, Any]) -> list[str]:
    """The served results' ids, in order."""
    return [result["id"] for result in body["results"]]


async def run(args: argparse.Namespace) -> None:
    endpoint = RerankEndpoint(args.stub_port)
    rng = random.Random(args.seed)
    butler = f"rerank-{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=args.base_url, timeout=60) as http:
        for start in range(0, args.episodes, 100):
            batch = [
                {"content": sentence(rng), "butler": butler}
                for _ in range(min(100, args.episodes - start))
            ]
            (await http.post("/v1/episodes/batch", json={"items": batch})).raise_for_status()
        queries = [question(rng, index) for index in range(args.queries)]
        for index in range(args.warm):  # the model, the statements, the store's own work
            await search(http, question(rng, args.queries + index), butler, False)
        timings: dict[str, list[float]] = {"fused": [], "reranked": [], "hung": []}
        problems: dict[str, int] = {"reranked": 0, "hung": 0}
        for query in queries:
            elapsed, body = await search(http, query, butler, False)
            timings["fused"].append(elapsed)
            fused = ids(body)
            elapsed, body = await search(http, query, butler, True)
            timings["reranked"].append(elapsed)
            scores = [r["contributions"].get("reranker") for r in body["results"]]
            expected = sorted(scores, key=lambda s: -(s if s is not None else -1))
            if not (body["reranker"] or {}).get("applied") or scores != expected:
                problems["reranked"] += 1
            endpoint.hang()
            elapsed, body = await search(http, query, butler, True)
            endpoint.answer()
            timings["hung"].append(elapsed)
            if (body["reranker"] or {}).get("applied") or ids(body) != fused:
                problems["hung"] += 1
    print(
        f"{args.episodes} episodes in one butler, {args.queries} questions asked each way, "
        f"limit 10, one search at a time; the reranker's budget {args.budget_ms} ms\n"
    )
    print("| phase | p50 / p95 / max, ms | searches not served as expected |")
    print("|---|---|---|")
    print(f"| `rerank: false` (fused, the floor) | {milliseconds(timings['fused'])} | |")
    print(
        f"| endpoint answering | {milliseconds(timings['reranked'])} | "
        f"{problems['reranked']} not in the endpoint's order |"
    )
    print(
        f"| endpoint hung | {milliseconds(timings['hung'])} | "
        f"{problems['hung']} not in the fused order or not marked skipped |"
    )
    over = [hung - floor for hung, floor in zip(timings["hung"], timings["fused"], strict=True)]
    slow = [index for index, extra in enumerate(over) if extra * 1000 > args.budget_ms + 10]
    over.sort()
    print(
        f"\nhung minus fused, per question: p50 {statistics.median(over) * 1000:.1f} ms, "
        f"p95 {over[int(0.95 * (len(over) - 1))] * 1000:.1f} ms, max {over[-1] * 1000:.1f} ms; "
        f"the budget plus 10 ms: {args.budget_ms + 10} ms; questions past it: {slow}"
    )
    endpoint.server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8796")
    parser.add_argument("--stub-port", type=int, default=8797)
    parser.add_argument(
        "--budget-ms",
        type=int,
        default=200,
        help="the server's ENGRAM_RERANKER__TIMEOUT_MS, for the report",
    )
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
