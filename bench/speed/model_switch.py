"""Switch a live store of N episodes to another embedding model while a probe searches
every second for memories it knows: misses, search latency before, during and after, and the
time of each step of the switch.

The store runs the packaged MiniLM and has the new model loaded beside it
(ENGRAM_EMBEDDING_NEXT__*): MiniLM's vectors lifted to 768 dimensions, served by
`bench/common/minilm_endpoint.py` on loopback (the same cosines, another width, so every
column and index is rebuilt). N episodes are seeded in SQL (`seed_sql.py`), the probe's own
through the API; `engram reembed --model` then runs as an operator would run it.

    python -m bench.speed.model_switch --n 100000
"""

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.embedding import Embedder

PROBES = 20
SERVE_PORT = 8811
ENDPOINT_PORT = 8812


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)] if values else float("nan")


async def _wait_ready(http: httpx.AsyncClient, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if (await http.get("/readyz")).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        await asyncio.sleep(0.5)
    raise SystemExit("the server did not become ready")


async def _probe(
    http: httpx.AsyncClient, known: dict[str, str], rng: random.Random
) -> tuple[float, bool]:
    """One search for a known memory: (seconds, found in the first 10)."""
    memory_id, content = rng.choice(list(known.items()))
    started = time.perf_counter()
    response = await http.post("/v1/search", json={"query": content, "limit": 10})
    seconds = time.perf_counter() - started
    found = response.status_code == 200 and any(
        hit["id"] == memory_id for hit in response.json()["results"]
    )
    return seconds, found


async def _phase(
    http: httpx.AsyncClient,
    known: dict[str, str],
    rng: random.Random,
    *,
    seconds: float | None = None,
    until: subprocess.Popen[str] | None = None,
) -> tuple[list[float], int]:
    """Probe once a second for `seconds`, or until the process `until` ends."""
    latencies, misses = [], 0
    started = time.monotonic()
    while True:
        if seconds is not None and time.monotonic() - started >= seconds:
            break
        if until is not None and until.poll() is not None:
            break
        tick = time.monotonic()
        took, found = await _probe(http, known, rng)
        latencies.append(took)
        misses += not found
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    return latencies, misses


def _query_floor(queries: list[str], *, remote: bool) -> float:
    """p95 of one model alone embedding a query: MiniLM in this process, or the new model's
    endpoint (one request each)."""
    times = []
    if remote:
        with httpx.Client(base_url=f"http://127.0.0.1:{ENDPOINT_PORT}/v1") as http:
            for query in queries * 5:
                started = time.perf_counter()
                http.post("/embeddings", json={"model": "m", "input": [query]}).raise_for_status()
                times.append(time.perf_counter() - started)
        return _p95(times)
    model = Embedder()
    model.embed("warm up")
    for query in queries * 5:
        started = time.perf_counter()
        model.embed(query)
        times.append(time.perf_counter() - started)
    return _p95(times)


async def run(args: argparse.Namespace) -> None:
    data = Path(tempfile.mkdtemp(prefix="engram-switch-"))
    env = {
        **os.environ,
        "ENGRAM_DATA_DIR": str(data),
        "ENGRAM_LIMITS__REQUESTS_PER_SECOND": "0",
        "ENGRAM_EMBEDDING_NEXT__MODEL": "minilm-lift768",
        "ENGRAM_EMBEDDING_NEXT__BACKEND": "openai",
        "ENGRAM_EMBEDDING_NEXT__BASE_URL": f"http://127.0.0.1:{ENDPOINT_PORT}/v1",
        "ENGRAM_EMBEDDING_NEXT__DIMENSIONS": "768",
    }
    python = sys.executable
    endpoint = subprocess.Popen(
        [
            python,
            "-m",
            "bench.common.minilm_endpoint",
            "--transform",
            "lift768",
            "--port",
            str(ENDPOINT_PORT),
        ]
    )
    server = subprocess.Popen(
        [python, "-m", "app.cli", "serve", "--no-auth", "--port", str(SERVE_PORT)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    rng = random.Random(11)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{SERVE_PORT}", timeout=60) as http:
            await _wait_ready(http)
            known = {}
            for n in range(PROBES):
                content = (
                    f"Probe memory {n}: the heron counted {n * 7 + 3} pebbles by the "
                    f"{['mill', 'weir', 'ford', 'quay'][n % 4]} at dawn"
                )
                stored = await http.post(
                    "/v1/episodes", json={"content": content, "butler": "probe"}
                )
                known[stored.json()["id"]] = content
            database = f"postgresql://postgres@/engram?host={data}/pgdata/run"
            seeded = subprocess.run(
                [
                    python,
                    "-m",
                    "bench.speed.seed_sql",
                    "--database-url",
                    database,
                    "--n",
                    str(args.n),
                    "--maintenance-work-mem",
                    "1GB",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            print(seeded.stdout.strip())
            idle, idle_misses = await _phase(http, known, rng, seconds=args.idle_seconds)
            started = time.monotonic()
            switch = subprocess.Popen(
                [python, "-m", "app.cli", "reembed", "--model", "minilm-lift768"],
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            during, during_misses = await _phase(http, known, rng, until=switch)
            switch_seconds = time.monotonic() - started
            output = switch.stdout.read() if switch.stdout else ""
            if switch.wait() != 0:
                raise SystemExit(f"engram reembed --model failed:\n{output}")
            after, after_misses = await _phase(http, known, rng, seconds=args.idle_seconds)
        server.terminate()
        server.wait()
        remote_floor = _query_floor(list(known.values()), remote=True)
    finally:
        server.terminate()
        server.wait()
        endpoint.terminate()
    floor = _query_floor(list(known.values()), remote=False)
    print(f"\nstore: {args.n} seeded episodes + {PROBES} probe episodes; 2 vCPU")
    print(output.strip())
    print(f"switch, as the command ran: {switch_seconds:.0f} s")
    print("\n| phase | searches | misses | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for name, values, misses in (
        ("before (idle)", idle, idle_misses),
        ("during the switch", during, during_misses),
        ("after", after, after_misses),
    ):
        print(
            f"| {name} | {len(values)} | {misses} | "
            f"{statistics.median(values) * 1000:.1f} | {_p95(values) * 1000:.1f} |"
        )
    print(
        f"\nfloors (p95 of a probe query's embedding alone): MiniLM in process "
        f"{floor * 1000:.1f} ms (before); the new model's endpoint {remote_floor * 1000:.1f} "
        f"ms (after)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="episodes seeded in SQL")
    parser.add_argument(
        "--idle-seconds", type=float, default=30.0, help="probing before and after the switch"
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
