"""Speed of Engram through HTTP: batch ingest throughput and retrieval latency.

Seeds N episodes (varied generated sentences over several butlers) through
POST /v1/episodes/batch, plus N/20 facts and N/100 rules through POST /v1/facts and
/v1/rules, then times distinct queries one at a time against /v1/search (hybrid),
/v1/recall and /v1/context, and prints p50/p95.

    engram serve --port 8732 &          # against an empty database
    python bench/speed.py --base-url http://127.0.0.1:8732 --n 10000
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

NAMES = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "John", "Maria", "Joanna", "Nate",
         "Audrey", "Andrew", "Evan", "Sam", "Priya", "Deborah", "Jolene", "Calvin", "Dave",
         "Lena", "Omar", "Yuki", "Tomas", "Aisha", "Bruno", "Chloe", "Diego", "Elif", "Farah",
         "Greta", "Hiro", "Ines", "Jamal", "Kofi", "Lucia", "Mateo", "Nadia", "Oscar",
         "Paula", "Quinn", "Rosa"]
ACTIVITIES = ["went hiking", "signed up for a pottery class", "started learning the guitar",
              "adopted a rescue dog", "ran a half marathon", "painted a sunrise",
              "visited an art museum", "volunteered at the shelter", "baked sourdough bread",
              "joined a book club", "planted tomatoes", "repaired an old bicycle",
              "took a photography workshop", "went camping", "tried rock climbing",
              "cooked a Thai curry", "attended a jazz concert", "wrote a short story",
              "went to a support group", "applied for a new job", "moved to a new apartment",
              "started a podcast", "learned to swim", "built a bookshelf", "went kayaking",
              "celebrated a birthday", "organised a charity bake sale", "studied for an exam",
              "watched a documentary about whales", "went birdwatching",
              "visited their grandparents", "bought a used car", "got a tattoo",
              "finished a puzzle", "hosted a dinner party", "went to a yoga retreat",
              "traveled by train", "lost their phone", "fixed the kitchen sink",
              "gave a talk at work", "researched adoption agencies", "went skiing",
              "started therapy", "knitted a scarf", "read a novel about space travel",
              "went fishing", "taught a coding class", "ran into an old friend",
              "planned a road trip", "joined a choir"]
PLACES = ["in Boston", "at the lake", "near the beach", "in the mountains", "downtown",
          "at the community center", "in Paris", "at the park", "in their hometown",
          "at the library", "in Tokyo", "at the farmers market", "in the garden",
          "at a friend's house", "in Barcelona", "at the gym", "in the countryside",
          "at the office", "in Chicago", "on the island"]
TIMES = ["last weekend", "yesterday", "two weeks ago", "this morning", "last summer",
         "in May 2023", "on Tuesday evening", "over the holidays", "last month",
         "a few days ago", "in the spring", "after work", "on their birthday",
         "during the vacation", "last year"]
FEELINGS = ["and loved it", "and felt proud", "but it rained the whole time",
            "with their sister", "with some coworkers", "and it was exhausting",
            "and wants to do it again", "to relax after a stressful week",
            "and met a lot of kind people", "and took many photos", "", "", ""]
PREDICATES = ["hobby", "pet", "job", "home city", "favourite food", "goal", "instrument",
              "sport", "book", "fear"]
BUTLERS = ["chat", "email", "calendar", "health", "travel", "finance", "social", "work"]
QUESTIONS = ["What did {name} do {time}?", "Where did {name} go {time}?",
             "Has {name} ever {activity}?", "Who {activity} {place}?",
             "When did {name} {activity_bare}?", "What does {name} enjoy {place}?"]


def sentence(rng: random.Random) -> str:
    """One varied episode sentence."""
    parts = [rng.choice(NAMES), rng.choice(ACTIVITIES), rng.choice(PLACES), rng.choice(TIMES),
             rng.choice(FEELINGS)]
    return " ".join(p for p in parts if p) + "."


def question(rng: random.Random, index: int) -> str:
    """A distinct natural-language question (the index keeps every one different)."""
    return question_with_parts(rng, index)[0]


def question_with_parts(rng: random.Random, index: int) -> tuple[str, list[str]]:
    """`question`'s text and the sentence parts it names (a name, a time, a place, an
    activity without its verb), which an episode that answers it holds."""
    activity = rng.choice(ACTIVITIES)
    template = rng.choice(QUESTIONS)
    values = {"name": rng.choice(NAMES), "time": rng.choice(TIMES), "place": rng.choice(PLACES),
              "activity": activity, "activity_bare": activity.split(" ", 1)[1]}
    text = template.format(**values)
    named = [values["activity_bare" if key == "activity" else key]
             for key in ("name", "time", "place", "activity", "activity_bare")
             if "{" + key + "}" in template]
    text = f"{text} ({index})" if index % 2 else text.replace("?", f" #{index}?")
    return text, named


async def seed_episodes(http: httpx.AsyncClient, rng: random.Random, n: int, batch: int,
                        concurrency: int = 1) -> float:
    """Store n episodes in batches, `concurrency` requests in flight; returns memories/s."""
    batches = []
    for start in range(0, n, batch):
        batches.append([{"content": sentence(rng), "butler": rng.choice(BUTLERS),
                         "importance": rng.randint(1, 10)}
                        for _ in range(min(batch, n - start))])
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


async def seed_facts_and_rules(http: httpx.AsyncClient, rng: random.Random, facts: int,
                               rules: int, concurrency: int = 4) -> None:
    """Store facts and rules one request each (there is no batch endpoint for them)."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(path: str, body: dict[str, Any]) -> None:
        async with semaphore:
            response = await http.post(path, json=body)
            response.raise_for_status()

    jobs = [one("/v1/facts", {"subject": f"{rng.choice(NAMES)} {i}",
                              "predicate": rng.choice(PREDICATES), "content": sentence(rng),
                              "scope": rng.choice(["global", *BUTLERS]),
                              "importance": rng.randint(1, 10)})
            for i in range(facts)]
    jobs += [one("/v1/rules", {"content": f"When {rng.choice(NAMES)} mentions "
                               f"{rng.choice(ACTIVITIES)}, ask how it went {i}",
                               "scope": rng.choice(["global", *BUTLERS])})
             for i in range(rules)]
    await asyncio.gather(*jobs)


async def timed(label: str, count: int,
                call: Callable[[int], Awaitable[httpx.Response]]) -> dict[str, float]:
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
    result = {"p50": statistics.median(samples), "p95": samples[int(0.95 * (count - 1))],
              "mean": statistics.fmean(samples)}
    print(f"{label:<16} p50 {result['p50']:6.1f} ms   p95 {result['p95']:6.1f} ms   "
          f"mean {result['mean']:6.1f} ms   ({count} distinct queries)")
    return result


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    async with httpx.AsyncClient(base_url=args.base_url, timeout=600) as http:
        if not args.skip_seed:
            rate = await seed_episodes(http, rng, args.n, args.batch, args.concurrency)
            print(f"ingest: {args.n} episodes through /v1/episodes/batch (batch {args.batch}, "
                  f"{args.concurrency} in flight): {rate:.0f} memories/s")
            await seed_facts_and_rules(http, rng, args.n // 20, args.n // 100)
            print(f"seeded {args.n // 20} facts and {args.n // 100} rules")
        qrng = random.Random(args.seed + 1)
        questions = [question(qrng, i) for i in range(args.queries + 10)]

        def scope_of(i: int) -> str | None:
            return None if i % 3 == 0 else BUTLERS[i % len(BUTLERS)]

        for fusion in args.fusion:
            await timed(f"search hybrid ({fusion})", args.queries,
                        lambda i, f=fusion: http.post("/v1/search", json={
                            "query": questions[i], "mode": "hybrid", "limit": 10,
                            "scope": scope_of(i), "fusion": f}))
        await timed("recall", args.queries, lambda i: http.post("/v1/recall", json={
            "topic": questions[i] + " recall", "limit": 10, "scope": scope_of(i)}))
        await timed("context", args.queries, lambda i: http.post("/v1/context", json={
            "trigger_prompt": questions[i] + " context",
            "butler": BUTLERS[i % len(BUTLERS)]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--n", type=int, default=10_000, help="episodes to seed")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=1, help="batch requests in flight")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-seed", action="store_true", help="only time the queries")
    parser.add_argument("--fusion", nargs="+", default=["learned", "rrf"],
                        choices=("learned", "rrf", "weighted"), help="hybrid fusions to time")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
