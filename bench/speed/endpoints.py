"""Speed of Engram through HTTP: batch ingest throughput and retrieval latency.

Seeds N episodes (varied generated sentences over several butlers) through
POST /v1/episodes/batch, plus N/20 facts and N/100 rules through POST /v1/facts and
/v1/rules, then times distinct queries one at a time against /v1/search (hybrid),
/v1/recall and /v1/context, and prints p50/p95.

    engram serve --port 8732 &          # against an empty database
    python -m bench.speed.endpoints --base-url http://127.0.0.1:8732 --n 10000
"""

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from bench.common.texts import ACTIVITIES, BUTLERS, NAMES, PREDICATES, question, sentence


async def seed_episodes(
    http: httpx.AsyncClient, rng: random.Random, n: int, batch: int, concurrency: int = 1
) -> float:
    """Store n episodes in batches, `concurrency` requests in flight; returns memories/s."""
    batches = []
    for start in range(0, n, batch):
        batches.append(
            [
                {
                    "content": sentence(rng),
                    "butler": rng.choice(BUTLERS),
                    "importance": rng.randint(1, 10),
                }
                for _ in range(min(batch, n - start))
            ]
        )
    queue: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue()
    for items in batches:
        queue.put_nowait(items)
    done = 0
    start_time = time.perf_counter()

    async def worker() -> None:
        nonlocal done
        while not queue.empty():
            items = queue.get_nowait()
            response = await http.post("/v1/episodes/batch", json={"items": items})
            response.raise_for_status()
            done += len(items)
            if done % (batch * 20) == 0 or done == n:
                rate = done / (time.perf_counter() - start_time)
                print(f"  {done}/{n} episodes, {rate:.0f}/s", file=sys.stderr)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return n / (time.perf_counter() - start_time)


async def seed_facts_and_rules(
    http: httpx.AsyncClient, rng: random.Random, facts: int, rules: int, concurrency: int = 4
) -> None:
    """Store facts and rules one request each (there is no batch endpoint for them)."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(path: str, body: dict[str, Any]) -> None:
        async with semaphore:
            response = await http.post(path, json=body)
            response.raise_for_status()

    jobs = [
        one(
            "/v1/facts",
            {
                "subject": f"{rng.choice(NAMES)} {i}",
                "predicate": rng.choice(PREDICATES),
                "content": sentence(rng),
                "scope": rng.choice(["global", *BUTLERS]),
                "importance": rng.randint(1, 10),
            },
        )
        for i in range(facts)
    ]
    jobs += [
        one(
            "/v1/rules",
            {
                "content": f"When {rng.choice(NAMES)} mentions "
                f"{rng.choice(ACTIVITIES)}, ask how it went {i}",
                "scope": rng.choice(["global", *BUTLERS]),
            },
        )
        for i in range(rules)
    ]
    await asyncio.gather(*jobs)


async def timed(
    label: str, count: int, call: Callable[[int], Awaitable[httpx.Response]]
) -> dict[str, float]:
    """Run `call` count times sequentially (after 10 warm-ups); p50/p95 in ms."""
    for i in range(10):
        (await call(-1 - i)).raise_for_status()
    samples = []
    for i in range(count):
        start = time.perf_counter()
        response = await call(i)
        samples.append((time.perf_counter() - start) * 1000)
        response.raise_for_status()
    samples.sort()
    result = {
        "p50": statistics.median(samples),
        "p95": samples[int(0.95 * (count - 1))],
        "mean": statistics.fmean(samples),
    }
    print(
        f"{label:<16} p50 {result['p50']:6.1f} ms   p95 {result['p95']:6.1f} ms   "
        f"mean {result['mean']:6.1f} ms   ({count} distinct queries)"
    )
    return result


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    async with httpx.AsyncClient(base_url=args.base_url, timeout=600) as http:
        if not args.skip_seed:
            rate = await seed_episodes(http, rng, args.n, args.batch, args.concurrency)
            print(
                f"ingest: {args.n} episodes through /v1/episodes/batch (batch {args.batch}, "
                f"{args.concurrency} in flight): {rate:.0f} memories/s"
            )
            await seed_facts_and_rules(http, rng, args.n // 20, args.n // 100)
            print(f"seeded {args.n // 20} facts and {args.n // 100} rules")
        qrng = random.Random(args.seed + 1)
        questions = [question(qrng, i) for i in range(args.queries + 10)]

        def scope_of(i: int) -> str | None:
            return None if i % 3 == 0 else BUTLERS[i % len(BUTLERS)]

        for fusion in args.fusion:
            await timed(
                f"search hybrid ({fusion})",
                args.queries,
                lambda i, f=fusion: http.post(
                    "/v1/search",
                    json={
                        "query": questions[i],
                        "mode": "hybrid",
                        "limit": 10,
                        "scope": scope_of(i),
                        "fusion": f,
                    },
                ),
            )
        await timed(
            "recall",
            args.queries,
            lambda i: http.post(
                "/v1/recall",
                json={"topic": questions[i] + " recall", "limit": 10, "scope": scope_of(i)},
            ),
        )
        await timed(
            "context",
            args.queries,
            lambda i: http.post(
                "/v1/context",
                json={
                    "trigger_prompt": questions[i] + " context",
                    "butler": BUTLERS[i % len(BUTLERS)],
                },
            ),
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--n", type=int, default=10_000, help="episodes to seed")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=1, help="batch requests in flight")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-seed", action="store_true", help="only time the queries")
    parser.add_argument(
        "--fusion",
        nargs="+",
        default=["learned", "rrf"],
        choices=("learned", "rrf", "weighted"),
        help="hybrid fusions to time",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
