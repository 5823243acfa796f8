"""Engram under load through HTTP: one tenant's huge batch against another's searches, and
mixed concurrent clients.

Three phases, each printing median and p95:
1. idle: tenant A's searches, one at a time, with nothing else running;
2. stall: tenant H posts `--stall-batches` batches of `--stall-items` (500) episodes of 49,000
   characters each while tenant A keeps searching one at a time; H's batch time is printed;
3. mixed: `--clients` concurrent clients of tenant A, each alternating a short
   POST /v1/episodes and a read, for `--seconds`; the reads take turns among `--reads`
   (search, recall, context; search alone by default), `--no-writes` leaves the writes out,
   and each kind gets its own median and p95; with `--server-pid`, it also
   prints where the machine's cores went (Linux /proc): the server's event-loop thread, its
   other threads (the model), this client, and the rest (PostgreSQL), per request.
Tenant A first stores `--seed-episodes` short episodes (2,000 by default).
The floor is the embedding model alone, measured in this process with the server's backend.
Eight fast clients of one key pass the default limit of 100 requests a second per key, so a
capacity run starts the server without it (a 429 stops the run and says so):

    engram keys create --tenant a; engram keys create --tenant h
    ENGRAM_LIMITS__REQUESTS_PER_SECOND=0 engram serve --port 8732 &
    python -m bench.speed.load --base-url http://127.0.0.1:8732 --key-a KEY_A --key-h KEY_H \
        --server-pid $(pgrep -f 'engram serve')
"""

import argparse
import asyncio
import os
import random
import statistics
import time
from pathlib import Path

import httpx

WORDS = (
    "garden hiking pottery guitar museum concert sourdough kayak library puzzle train "
    "birthday recipe camera bicycle marathon lake mountain island festival"
).split()


def checked(response: httpx.Response) -> None:
    """Raise for an error answer; a 429 ends the run with the setting that lifts the limit."""
    if response.status_code == 429:
        raise SystemExit(
            "the server's per-key rate limit answered 429: start it with "
            "ENGRAM_LIMITS__REQUESTS_PER_SECOND=0 for a capacity run"
        )
    response.raise_for_status()


def percentiles(samples: list[float]) -> str:
    """Median and p95 in milliseconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"


def rss_megabytes(pid: int | None) -> float | None:
    """The server's resident memory in MB, when its pid is known."""
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def rss_mb(pid: int | None) -> str:
    """The server's resident memory as text ("n/a" when unknown)."""
    megabytes = rss_megabytes(pid)
    return "n/a" if megabytes is None else f"{megabytes:.0f} MB"


async def peak_rss(pid: int | None, stop: asyncio.Event) -> float | None:
    """The highest resident memory of the server seen twice a second until `stop`."""
    peak = rss_megabytes(pid)
    while peak is not None and not stop.is_set():
        await asyncio.sleep(0.5)
        peak = max(peak, rss_megabytes(pid) or 0)
    return peak


def machine_ticks() -> tuple[int, int]:
    """Busy and total CPU ticks of the whole machine since boot (Linux /proc/stat)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields[:8]) - idle, sum(fields[:8])


def thread_ticks(pid: int | None) -> dict[str, int]:
    """CPU ticks of `pid`'s main thread (the event loop) and of its other threads (the model
    and ONNX Runtime's pool); {} without a pid."""
    if pid is None:
        return {}
    ticks: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:
            continue
        name = "main thread" if task.name == str(pid) else "other threads"
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks


def cpu_budget(
    before: tuple[tuple[int, int], dict[str, int], float],
    elapsed: float,
    requests: int,
    server_pid: int | None,
) -> None:
    """Where the cores went during the mixed phase, in cores and in CPU ms per request."""
    (busy0, total0), threads0, client0 = before
    busy1, total1 = machine_ticks()
    cores = os.cpu_count() or 1
    machine = cores * (busy1 - busy0) / max(total1 - total0, 1)
    hz = os.sysconf("SC_CLK_TCK")
    parts = {"client (this process)": time.process_time() - client0}
    for name, ticks in thread_ticks(server_pid).items():
        spent = (ticks - threads0.get(name, 0)) / hz
        if spent > 0:
            parts[f"server, {name}"] = spent
    parts["rest (PostgreSQL, others)"] = machine * elapsed - sum(parts.values())
    print(
        f"mixed: machine busy {machine:.2f} of {cores} cores, "
        f"{machine * elapsed / requests * 1000:.1f} CPU ms per request"
    )
    for name, spent in sorted(parts.items(), key=lambda item: -item[1]):
        print(
            f"mixed:   {name:28} {spent / elapsed:5.2f} cores  "
            f"{spent / requests * 1000:5.1f} ms/request"
        )


def query(rng: random.Random) -> str:
    """A short natural-language question."""
    return "when did they " + " ".join(rng.sample(WORDS, 3))


async def search_loop(
    http: httpx.AsyncClient, rng: random.Random, *, stop: asyncio.Event, limit: int
) -> list[float]:
    """Tenant A's sequential searches until `stop` is set or `limit` searches are done."""
    samples: list[float] = []
    while not stop.is_set() and len(samples) < limit:
        started = time.perf_counter()
        response = await http.post("/v1/search", json={"query": query(rng), "limit": 10})
        checked(response)
        samples.append(time.perf_counter() - started)
    return samples


async def stall(
    args: argparse.Namespace, a: httpx.AsyncClient, h: httpx.AsyncClient, rng: random.Random
) -> None:
    """Tenant A's search latency while tenant H's huge batches are embedded."""
    text = ("The quarterly report covers " + " ".join(rng.choices(WORDS, k=8)) + ". ") * 700
    items = [{"content": text[:49_000], "butler": "bulk"} for _ in range(args.stall_items)]
    stop = asyncio.Event()
    searches = asyncio.create_task(search_loop(a, rng, stop=stop, limit=10**6))
    peak = asyncio.create_task(peak_rss(args.server_pid, stop))
    batch_times = []
    for _ in range(args.stall_batches):
        started = time.perf_counter()
        # No timeout: 500 items of 49,000 characters are about 40 minutes of the model here.
        response = await h.post("/v1/episodes/batch", json={"items": items}, timeout=None)
        checked(response)
        batch_times.append(time.perf_counter() - started)
    stop.set()
    samples = await searches
    if (peak_megabytes := await peak) is not None:
        print(f"stall: server RSS peak during the batches: {peak_megabytes:.0f} MB")
    print(f"stall: A search during H's batches ({len(samples)} searches)  {percentiles(samples)}")
    print(
        f"stall: H batch of {args.stall_items} x 49,000 chars: "
        f"{', '.join(f'{t:.1f} s' for t in batch_times)}"
    )


def request_of(
    kind: str, rng: random.Random, index: int, butler: str
) -> tuple[str, dict[str, object]]:
    """The path and body of one mixed-phase request of `kind`."""
    if kind == "write":
        return "/v1/episodes", {
            "content": f"Client {index} noted {' '.join(rng.sample(WORDS, 6))}",
            "butler": "mixed",
        }
    if kind == "recall":
        return "/v1/recall", {"topic": query(rng), "limit": 10}
    if kind == "context":
        return "/v1/context", {"trigger_prompt": query(rng), "butler": butler}
    return "/v1/search", {"query": query(rng), "limit": 10}


async def mixed(args: argparse.Namespace, a: httpx.AsyncClient, rng: random.Random) -> None:
    """Concurrent clients alternating a write and a read (or reading only)."""
    samples: list[float] = []
    kinds = [
        kind for read in args.reads for kind in ([read] if args.no_writes else ["write", read])
    ]
    by_kind: dict[str, list[float]] = {kind: [] for kind in kinds}
    deadline = time.perf_counter() + args.seconds

    async def client(index: int) -> None:
        local = random.Random(index)
        turn = index  # clients start at different kinds
        while time.perf_counter() < deadline:
            kind = kinds[turn % len(kinds)]
            path, body = request_of(kind, local, index, args.butler)
            started = time.perf_counter()
            checked(await a.post(path, json=body))
            samples.append(time.perf_counter() - started)
            by_kind[kind].append(samples[-1])
            turn += 1

    before = (machine_ticks(), thread_ticks(args.server_pid), time.process_time())
    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(args.clients)))
    elapsed = time.perf_counter() - started
    print(
        f"mixed: {args.clients} clients, {len(samples)} requests in {elapsed:.1f} s = "
        f"{len(samples) / elapsed:.1f} req/s  {percentiles(samples)}"
    )
    for kind, kind_samples in by_kind.items():
        print(f"mixed: {kind:6} ({len(kind_samples)})  {percentiles(kind_samples)}")
    cpu_budget(before, elapsed, len(samples), args.server_pid)


def model_floor(backend: str | None) -> None:
    """The model alone: one query sentence at a time, in this process."""
    from app.core.config import Settings
    from app.embedding import get_embedder

    settings = Settings() if backend is None else Settings(embedding_backend=backend)
    embedder = get_embedder(settings)
    embedder.load()
    rng = random.Random(7)
    samples = []
    for _ in range(100):
        started = time.perf_counter()
        embedder.embed(query(rng))
        samples.append(time.perf_counter() - started)
    print(f"floor: model alone ({settings.embedding_backend}), one query  {percentiles(samples)}")


async def run(args: argparse.Namespace) -> None:
    """All three phases against the running server."""

    def client(key: str | None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.AsyncClient(base_url=args.base_url, headers=headers, timeout=120)

    rng = random.Random(42)
    async with client(args.key_a) as a, client(args.key_h or args.key_a) as h:
        for i in range(0, args.seed_episodes, 500):
            await a.post(
                "/v1/episodes/batch",
                json={
                    "items": [
                        {"content": f"Note {j}: {' '.join(rng.sample(WORDS, 8))}", "butler": "seed"}
                        for j in range(i, min(i + 500, args.seed_episodes))
                    ]
                },
                timeout=600,
            )
        print(f"server RSS before: {rss_mb(args.server_pid)}")
        idle = await search_loop(a, rng, stop=asyncio.Event(), limit=args.searches)
        print(f"idle: A search ({len(idle)} searches)  {percentiles(idle)}")
        if args.stall_batches:
            await stall(args, a, h, rng)
            await asyncio.sleep(2)  # the server gives freed heap back just after answering
            print(f"server RSS after the stall batches: {rss_mb(args.server_pid)}")
        if args.seconds:
            await mixed(args, a, rng)
    model_floor(args.backend)


def main() -> None:
    """Parse the arguments and run the phases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--key-a", help="API key of tenant A (none with --no-auth)")
    parser.add_argument("--key-h", help="API key of tenant H, the heavy one")
    parser.add_argument(
        "--server-pid", type=int, help="to report the server's RSS and CPU by thread"
    )
    parser.add_argument(
        "--seed-episodes",
        type=int,
        default=2000,
        help="short episodes tenant A stores first (0 on a store that has them)",
    )
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--stall-batches", type=int, default=1)
    parser.add_argument(
        "--stall-items",
        type=int,
        default=500,
        help="episodes per stall batch (500 takes about 40 minutes here)",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument(
        "--reads",
        nargs="+",
        choices=("search", "recall", "context"),
        default=["search"],
        help="the reads of the mixed phase, in turn",
    )
    parser.add_argument(
        "--butler",
        default="seed",
        help="the butler a context read assembles for (the seed's by default)",
    )
    parser.add_argument(
        "--no-writes", action="store_true", help="the mixed phase's clients only read"
    )
    parser.add_argument("--backend", help="embedding backend for the floor (default: settings)")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
