"""A tenant's chat beside its own big import: search and single-write latency, idle and
while the same tenant imports.

Starts `engram serve --no-auth` (the `default` tenant) on a new data directory and a free
loopback port, stores `--seed` episodes, then runs two phases of the same probes, one at a
time: a hybrid `POST /v1/search` and a single `POST /v1/facts`, `--probes` of each.

1. idle: nothing else runs;
2. import: `--clients` clients post batches of `--batch` episodes with session ids (chat
   turns, as an app importing a user's history sends them) into the same tenant, until
   the probes are done or each client has posted `--batches` batches.

Probes start at most one every `--interval` seconds (1), as a user's turns come, so the
import phase spans batches' embedding and their writing alike.

It prints each probe's p50 / p95 / max idle and during the import side by side, with the
ratio of the p95s (the goal: at most 2), the import's throughput, and, sampled every 0.2 s
during the import: what the server's active connections waited on (pg_stat_activity; a lock
waiter with the statement it and its blocker run), the age of the oldest open transaction
that has written (its row locks, the tenant's keyword statistics among them, are held until
it ends) and the longest model queue (`engram_model_queue_chunks`). A probe that takes longer than
`--timeout` seconds counts as that long and is reported. Only loopback traffic.

    python -m bench.speed.import_beside_chat                # small: about 2-4 minutes
    python -m bench.speed.import_beside_chat --probes 40 --batches 12
"""

import argparse
import asyncio
import collections
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import httpx

from bench.common.texts import sentence

OWNER = "postgres"
PROBES = ("search", "fact write")


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`engram serve --no-auth` on `data_dir` and `port`, its output in `log`."""
    env = {**os.environ, "ENGRAM_DATA_DIR": str(data_dir)}
    engram = Path(sys.executable).with_name("engram")
    command = [str(engram)] if engram.exists() else [sys.executable, "-m", "app.cli"]
    return subprocess.Popen(
        [*command, "serve", "--no-auth", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


async def wait_ready(
    http: httpx.AsyncClient, server: subprocess.Popen[bytes], timeout: float
) -> None:
    """Wait until the server answers /healthz (bounded by `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            if (await http.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.25)
    raise SystemExit(f"the server did not start in {timeout:.0f} s")


def turns(rng: random.Random, count: int, session: str) -> list[dict[str, object]]:
    """`count` chat turns of one session, as a history import posts them."""
    return [
        {
            "content": f"{'user' if i % 2 == 0 else 'assistant'}: {sentence(rng)} {sentence(rng)}",
            "butler": "chat",
            "session_id": session,
        }
        for i in range(count)
    ]


async def probe(http: httpx.AsyncClient, kind: str, index: int, timeout: float) -> float:
    """One search or one single fact write; its time in seconds (`timeout` if it passed)."""
    started = time.perf_counter()
    try:
        if kind == "search":
            response = await http.post(
                "/v1/search",
                json={"query": f"what did Caroline do at the lake {index}?", "limit": 10},
                timeout=timeout,
            )
        else:
            response = await http.post(
                "/v1/facts",
                json={
                    "subject": "user",
                    "predicate": f"preference {index}",
                    "content": f"The user prefers tea number {index} in the morning.",
                },
                timeout=timeout,
            )
        response.raise_for_status()
    except httpx.TimeoutException:
        return timeout
    return time.perf_counter() - started


async def probes(
    http: httpx.AsyncClient, count: int, timeout: float, offset: int, interval: float = 0.0
) -> dict[str, list[float]]:
    """`count` of each probe, alternating, one at a time, one starting every `interval`
    seconds at most, as a user's chat turns come."""
    times: dict[str, list[float]] = {kind: [] for kind in PROBES}
    for index in range(count):
        for kind in PROBES:
            started = time.perf_counter()
            times[kind].append(await probe(http, kind, offset + index, timeout))
            await asyncio.sleep(max(0.0, interval - (time.perf_counter() - started)))
    return times


async def importer(
    http: httpx.AsyncClient,
    client: int,
    batches: int,
    size: int,
    stop: asyncio.Event,
    done: list[float],
) -> None:
    """Post up to `batches` batches of `size` turns until `stop`; each batch's time."""
    rng = random.Random(client)
    for batch in range(batches):
        if stop.is_set():
            return
        started = time.perf_counter()
        response = await http.post(
            "/v1/episodes/batch",
            timeout=600,
            json={"items": turns(rng, size, f"import-{client}-{batch}")},
        )
        response.raise_for_status()
        done.append(time.perf_counter() - started)


async def watch(
    http: httpx.AsyncClient,
    database: asyncpg.Connection | None,
    stop: asyncio.Event,
    waits: collections.Counter[str],
    queue_peak: list[float],
    writing: list[float],
) -> None:
    """Sample the connections' wait events, the age of the oldest transaction that has
    written (it holds its row locks until it ends) and the model queue until `stop`."""
    while not stop.is_set():
        metrics = (await http.get("/metrics")).text
        found = re.search(r"^engram_model_queue_chunks (\S+)$", metrics, re.MULTILINE)
        if found:
            queue_peak[0] = max(queue_peak[0], float(found.group(1)))
        if database is not None:
            held = await database.fetchval(WRITING)
            if held is not None:
                writing.append(held)
            for row in await database.fetch(WAITS):
                event = f"{row['wait_event_type'] or 'CPU'}:{row['wait_event'] or '-'}"
                if row["blocker"]:
                    event += f" {row['waiter']} behind {row['blocker']}"
                waits[event] += 1
        await asyncio.sleep(0.2)


# The active connections' wait events; a lock waiter with what it and its blocker run.
WAITS = """
    SELECT a.wait_event_type, a.wait_event,
           CASE WHEN a.wait_event_type = 'Lock' THEN substring(a.query from '^\\w+ \\w* ?\\w+')
           END AS waiter,
           (SELECT substring(b.query from '^\\w+ \\w* ?\\w+') || ' (' || b.state || ')'
            FROM pg_stat_activity b WHERE b.pid = (pg_blocking_pids(a.pid))[1]) AS blocker
    FROM pg_stat_activity a
    WHERE a.datname = 'engram' AND a.backend_type = 'client backend' AND a.state = 'active'
      AND a.pid <> pg_backend_pid()
"""

# The age in seconds of the oldest open transaction that has written.
WRITING = """
    SELECT extract(epoch FROM max(now() - xact_start)) FROM pg_stat_activity
    WHERE datname = 'engram' AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()
"""


def figures(samples: list[float]) -> tuple[float, float, float]:
    """p50, p95 and max in seconds."""
    ordered = sorted(samples)
    return (
        statistics.median(ordered),
        ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        ordered[-1],
    )


def report(idle: dict[str, list[float]], busy: dict[str, list[float]]) -> bool:
    """Print the two phases side by side; whether every p95 ratio is at most 2."""
    print(
        f"\n{'probe':<11} {'idle p50':>9} {'idle p95':>9} {'idle max':>9} │ "
        f"{'import p50':>10} {'import p95':>10} {'import max':>10} │ {'p95 ratio':>9}"
    )
    within = True
    for kind in PROBES:
        quiet, loaded = figures(idle[kind]), figures(busy[kind])
        ratio = loaded[1] / quiet[1]
        within = within and ratio <= 2
        print(
            f"{kind:<11} {quiet[0] * 1000:7.0f}ms "
            f"{quiet[1] * 1000:7.0f}ms {quiet[2] * 1000:7.0f}ms │ "
            f"{loaded[0] * 1000:8.0f}ms {loaded[1] * 1000:8.0f}ms {loaded[2] * 1000:8.0f}ms │ "
            f"{ratio:8.1f}x"
        )
    return within


async def run(args: argparse.Namespace, data_dir: Path) -> bool:
    port = free_port()
    server = start_server(data_dir, port, data_dir / "server.log")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            await wait_ready(http, server, timeout=180)
            rng = random.Random(7)
            for start in range(0, args.seed, 250):
                (
                    await http.post(
                        "/v1/episodes/batch",
                        json={"items": turns(rng, min(250, args.seed - start), f"seed-{start}")},
                        timeout=600,
                    )
                ).raise_for_status()
            await probes(http, 3, args.timeout, offset=10_000)  # warm the statements
            idle = await probes(http, args.probes, args.timeout, offset=0, interval=args.interval)
            database = None
            run_dir = data_dir / "pgdata" / "run"
            if run_dir.exists():
                database = await asyncpg.connect(host=str(run_dir), database="engram", user=OWNER)
            stop, batch_times = asyncio.Event(), []
            waits: collections.Counter[str] = collections.Counter()
            queue_peak, writing = [0.0], []
            watcher = asyncio.create_task(watch(http, database, stop, waits, queue_peak, writing))
            started = time.perf_counter()
            importers = [
                asyncio.create_task(
                    importer(http, client, args.batches, args.batch, stop, batch_times)
                )
                for client in range(args.clients)
            ]
            while queue_peak[0] == 0 and time.perf_counter() - started < 30:
                await asyncio.sleep(0.05)  # the import is embedding
            busy = await probes(
                http, args.probes, args.timeout, offset=1000, interval=args.interval
            )
            overlapped = not all(task.done() for task in importers)
            stop.set()
            await asyncio.gather(*importers)
            elapsed = time.perf_counter() - started
            await watcher
            if database is not None:
                await database.close()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
    within = report(idle, busy)
    if not overlapped:
        print("\nthe import ended before the probes did: raise --batches")
    episodes = len(batch_times) * args.batch
    print(
        f"\nimport: {len(batch_times)} batches of {args.batch} episodes from {args.clients} "
        f"clients, {episodes / elapsed:.0f} episodes/s, batch p50 "
        f"{statistics.median(batch_times) if batch_times else 0:.1f} s; "
        f"model queue peak {queue_peak[0]:.0f} chunks"
    )
    if writing:
        print(
            f"oldest writing transaction while sampled: p50 {statistics.median(writing):.2f} s, "
            f"max {max(writing):.2f} s ({len(writing)} samples with one open)"
        )
    sampled = sum(waits.values())
    if sampled:
        print("active connections during the import, by wait event (share of samples):")
        for event, count in waits.most_common(8):
            print(f"  {count / sampled:6.1%}  {event}")
    print(
        f"seed {args.seed} episodes; {args.probes} probes of each kind per phase; "
        f"machine: {os.cpu_count()} cores"
    )
    return within


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=20, help="searches and fact writes each")
    parser.add_argument("--seed", type=int, default=500, help="episodes stored first")
    parser.add_argument("--clients", type=int, default=2, help="clients posting batches")
    parser.add_argument("--batch", type=int, default=250, help="episodes per batch")
    parser.add_argument("--batches", type=int, default=6, help="most batches per client")
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        help="seconds from one probe's start to the next's, at least",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="a probe's limit (s)")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="eg-fair-"))
    try:
        within = asyncio.run(run(args, data_dir))
    finally:
        if args.keep:
            print(f"data directory kept: {data_dir}")
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    raise SystemExit(0 if within else 1)


if __name__ == "__main__":
    main()
