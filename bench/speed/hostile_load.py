"""A legitimate tenant's searches while hostile callers hammer the same server, on loopback.

Two phases, each printing the legitimate tenant's search p50 and p95:
1. idle: tenant A searches one query at a time with nothing else running;
2. attack: the same searches while a second process, at once and for `--seconds`, runs
   - `--flooders` clients send requests with a new random API key each time (`--max-flood`
     requests in all),
   - `--uploaders` clients post bodies just under the body limit with random keys, and as
     many again with no key at all,
   - `--slow-uploaders` clients send a body one small chunk a second,
   - `--slow-readers` clients of tenant H (a valid key) open `GET /v1/export` and read it
     one small chunk a second.
The attack prints how each kind of request was answered (status counts), the server's peak
resident memory, the cores the server and the attacking process used, and every 5xx. Every
request loop is bounded in count and in time, and every address is the server's own loopback
one.

    engram keys create --tenant default   # KEY_A: the store seeded by seed_sql.py
    engram keys create --tenant h         # KEY_H: the slow export readers
    engram serve --port 8796 &
    python -m bench.speed.hostile_load --base-url http://127.0.0.1:8796 \
        --key-a KEY_A --key-h KEY_H --server-pid $(pgrep -f 'engram serve')
"""

import argparse
import asyncio
import collections
import json
import os
import random
import resource
import secrets
import sys
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx

from bench.common.texts import question
from bench.speed.load import peak_rss, percentiles, rss_mb, thread_ticks

Counts = collections.Counter[str]


async def searches(
    http: httpx.AsyncClient, key: str, rng: random.Random, n: int, start: int, statuses: Counts
) -> list[float]:
    """Seconds of each of `n` searches of tenant A, one at a time."""
    timings = []
    for index in range(start, start + n):
        began = time.perf_counter()
        response = await http.post(
            "/v1/search",
            json={"query": question(rng, index), "limit": 10},
            headers={"authorization": f"Bearer {key}"},
        )
        timings.append(time.perf_counter() - began)
        statuses[f"legit {response.status_code}"] += 1
    return timings


async def flood(
    http: httpx.AsyncClient, deadline: float, budget: list[int], statuses: Counts
) -> None:
    """Searches with a fresh random key each, until the deadline or the shared budget ends."""
    while time.monotonic() < deadline and budget[0] > 0:
        budget[0] -= 1
        response = await http.post(
            "/v1/search",
            json={"query": "anything"},
            headers={"authorization": f"Bearer {secrets.token_hex(16)}"},
        )
        statuses[f"random key {response.status_code}"] += 1


async def huge_bodies(
    http: httpx.AsyncClient, deadline: float, size: int, with_key: bool, statuses: Counts
) -> None:
    """Bodies of `size` bytes, with a random key or none, until the deadline."""
    body = b'{"content": "' + b"x" * (size - 20) + b'"}'
    label = "huge body, random key" if with_key else "huge body, no key"
    while time.monotonic() < deadline:
        headers = {"content-type": "application/json"}
        if with_key:
            headers["authorization"] = f"Bearer {secrets.token_hex(16)}"
        try:
            response = await http.post("/v1/episodes", content=body, headers=headers)
            statuses[f"{label} {response.status_code}"] += 1
        except httpx.HTTPError as error:
            statuses[f"{label} {type(error).__name__}"] += 1


async def slow_upload(http: httpx.AsyncClient, deadline: float, statuses: Counts) -> None:
    """One body sent a small chunk a second, with a random key, until the deadline."""

    async def trickle() -> AsyncIterator[bytes]:
        yield b'{"content": "'
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            yield b"y" * 64
        yield b'"}'

    try:
        response = await http.post(
            "/v1/episodes",
            content=trickle(),
            headers={
                "content-type": "application/json",
                "authorization": f"Bearer {secrets.token_hex(16)}",
            },
        )
        statuses[f"slow upload {response.status_code}"] += 1
    except httpx.HTTPError as error:
        statuses[f"slow upload {type(error).__name__}"] += 1


async def slow_export(http: httpx.AsyncClient, key: str, deadline: float, statuses: Counts) -> None:
    """Tenant H's export, read a small chunk a second until the deadline."""
    try:
        async with http.stream(
            "GET", "/v1/export", headers={"authorization": f"Bearer {key}"}
        ) as response:
            statuses[f"slow export {response.status_code}"] += 1
            async for _ in response.aiter_raw(1024):
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(1.0)
    except httpx.HTTPError as error:
        statuses[f"slow export {type(error).__name__}"] += 1


def loopback_only(base_url: str) -> None:
    """Refuse any target but this machine's loopback addresses."""
    host = urlsplit(base_url).hostname or ""
    if host not in {"localhost", "::1"} and not host.startswith("127."):
        raise SystemExit(f"{host!r} is not a loopback address: this run attacks only loopback")


async def attack(args: argparse.Namespace) -> None:
    """Every hostile client at once for `--seconds`; prints the answers' counts as JSON."""
    statuses: Counts = collections.Counter()
    deadline = time.monotonic() + args.seconds
    budget = [args.max_flood]
    timeout = httpx.Timeout(args.seconds + 60)
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
    async with httpx.AsyncClient(base_url=args.base_url, timeout=timeout, limits=limits) as hostile:
        attackers = [flood(hostile, deadline, budget, statuses) for _ in range(args.flooders)]
        attackers += [
            huge_bodies(hostile, deadline, args.body_bytes, with_key, statuses)
            for _ in range(args.uploaders)
            for with_key in (True, False)
        ]
        attackers += [slow_upload(hostile, deadline, statuses) for _ in range(args.slow_uploaders)]
        attackers += [
            slow_export(hostile, args.key_h, deadline, statuses) for _ in range(args.slow_readers)
        ]
        await asyncio.gather(*attackers)
    print(json.dumps(statuses))


async def run(args: argparse.Namespace) -> None:
    """Idle searches, then the same searches while a second process attacks."""
    loopback_only(args.base_url)
    rng = random.Random(args.seed)
    statuses: Counts = collections.Counter()
    async with httpx.AsyncClient(base_url=args.base_url, timeout=60) as legit:
        await searches(legit, args.key_a, rng, 10, 0, collections.Counter())  # warm up
        idle = await searches(legit, args.key_a, rng, args.queries, 10, statuses)
        print(f"idle:   {percentiles(idle)}   server {rss_mb(args.server_pid)}")

        # The attackers run in a process of their own, so their work on this side of the
        # socket never delays the legitimate searches' own event loop.
        attacker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            __spec__.name,
            "--attack",
            *sys.argv[1:],
            stdout=asyncio.subprocess.PIPE,
        )
        server_ticks = sum(thread_ticks(args.server_pid).values())
        stop = asyncio.Event()
        rss = asyncio.create_task(peak_rss(args.server_pid, stop))
        counts = asyncio.create_task(attacker.communicate())
        under_attack: list[float] = []
        while not counts.done():
            under_attack += await searches(
                legit, args.key_a, rng, 10, 10 + args.queries + len(under_attack), statuses
            )
        stop.set()
        peak = await rss
        hz = os.sysconf("SC_CLK_TCK")
        server_cpu = (sum(thread_ticks(args.server_pid).values()) - server_ticks) / hz
    statuses.update(json.loads((await counts)[0]))
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    attacker_cpu = children.ru_utime + children.ru_stime
    print(
        f"attack: {percentiles(under_attack)}   ({len(under_attack)} searches over "
        f"{args.seconds:.0f} s)"
    )
    idle_p95 = sorted(idle)[int(0.95 * len(idle))]
    attack_p95 = sorted(under_attack)[min(len(under_attack) - 1, int(0.95 * len(under_attack)))]
    print(f"p95 under attack / idle: {attack_p95 / idle_p95:.2f}x")
    print("server peak memory: " + ("n/a" if peak is None else f"{peak:.0f} MB"))
    print(
        f"cores used over the attack: server {server_cpu / args.seconds:.2f}, "
        f"attacking process {attacker_cpu / args.seconds:.2f} (of {os.cpu_count()})"
    )
    for label, count in sorted(statuses.items()):
        print(f"  {label:40} {count:7d}")
    fives = sum(count for label, count in statuses.items() if label.split()[-1].startswith("5"))
    print(f"5xx answers: {fives}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8796")
    parser.add_argument("--key-a", required=True, help="the legitimate tenant's key")
    parser.add_argument("--key-h", required=True, help="the slow export readers' tenant's key")
    parser.add_argument("--server-pid", type=int)
    parser.add_argument("--queries", type=int, default=200, help="idle searches")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the attack")
    parser.add_argument("--flooders", type=int, default=4)
    parser.add_argument("--max-flood", type=int, default=100_000, help="random-key requests in all")
    parser.add_argument("--uploaders", type=int, default=2)
    parser.add_argument("--body-bytes", type=int, default=32 * 1024 * 1024 - 1024)
    parser.add_argument("--slow-uploaders", type=int, default=20)
    parser.add_argument("--slow-readers", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--attack", action="store_true", help="be the attacking process (the run starts it itself)"
    )
    args = parser.parse_args()
    asyncio.run(attack(args) if args.attack else run(args))


if __name__ == "__main__":
    main()
