"""What one episode write costs for English text and for text written without spaces (real
Chinese, and synthetic CJK with about one new character pair per character), at growing
sizes, and what one long query costs in each; beside each write, its floor: the model alone
on the texts the service embeds for it (the text and its passages), in this process.

Against a running server (see bench/README.md). Each size is stored `--repeat` times as one
`POST /v1/episodes` of its own butler, the three kinds in turns; the table gives the median
seconds. Then `--queries` searches of `--query-chars` characters of each kind.

    python -m bench.speed.cjk_writes --base-url http://127.0.0.1:8732 \\
        --xquad ../shared/data/xquad
"""

import argparse
import asyncio
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from bench.common.texts import sentence
from bench.quality.xquad_recall import paragraphs_and_questions

SIZES = (1_000, 5_000, 10_000, 50_000)
# CJK unified ideographs: random ones give about one distinct character pair per character.
CJK_FIRST, CJK_LAST = 0x4E00, 0x9FFF


def english(rng: random.Random, chars: int) -> str:
    """Generated English sentences, cut to `chars` characters."""
    parts: list[str] = []
    while sum(len(part) + 1 for part in parts) < chars:
        parts.append(sentence(rng))
    return " ".join(parts)[:chars]


def chinese(paragraphs: list[str], rng: random.Random, chars: int) -> str:
    """XQuAD's Chinese paragraphs from a random one on, repeated as needed, cut to `chars`."""
    start = rng.randrange(len(paragraphs))
    text = ""
    index = start
    while len(text) < chars:
        text += paragraphs[index % len(paragraphs)]
        index += 1
    return text[:chars]


def synthetic(rng: random.Random, chars: int) -> str:
    """`chars` random CJK ideographs."""
    return "".join(chr(rng.randint(CJK_FIRST, CJK_LAST)) for _ in range(chars))


async def timed(http: httpx.AsyncClient, path: str, body: dict[str, object]) -> float:
    """Seconds of one POST; the status is printed when it fails."""
    began = time.perf_counter()
    response = await http.post(path, json=body)
    elapsed = time.perf_counter() - began
    if response.status_code >= 400:
        print(f"  {path}: {response.status_code} {response.text[:200]}")
    return elapsed


def model_floor() -> Callable[[str], Awaitable[float]]:
    """Seconds the packaged model (built from the same settings as the server's) takes on a
    text and its passages, as a write embeds them."""
    from app.core.config import Settings
    from app.core.text import split_passages
    from app.embedding import get_embedder

    settings = Settings()
    embedder = get_embedder(settings)
    embedder.load()

    async def seconds(text: str) -> float:
        texts = [
            text,
            *(
                text[start:end]
                for start, end in split_passages(
                    text,
                    size=settings.embedding_passage_chars,
                    overlap=settings.embedding_passage_overlap,
                )
            ),
        ]
        began = time.perf_counter()
        await embedder.aembed_batch(texts, tenant_id="floor")
        return time.perf_counter() - began

    return seconds


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    paragraphs, _ = paragraphs_and_questions(Path(args.xquad) / "xquad.zh.json")
    kinds = {
        "English": lambda n: english(rng, n),
        "Chinese (XQuAD)": lambda n: chinese(paragraphs, rng, n),
        "synthetic CJK": lambda n: synthetic(rng, n),
    }
    butler = f"cjk-{uuid.uuid4().hex[:6]}"
    sizes = [size for size in SIZES if size <= args.max_chars]
    taken: dict[tuple[str, int], list[float]] = {}
    floor: dict[tuple[str, int], list[float]] = {}
    model = model_floor() if args.floor else None
    async with httpx.AsyncClient(base_url=args.base_url, timeout=args.timeout) as http:
        await timed(http, "/v1/episodes", {"content": "warm up", "butler": butler})
        for size in sizes:
            for _ in range(args.repeat):
                for kind, make in kinds.items():
                    text = make(size)
                    taken.setdefault((kind, size), []).append(
                        await timed(http, "/v1/episodes", {"content": text, "butler": butler})
                    )
                    if model is not None:
                        floor.setdefault((kind, size), []).append(await model(text))
        queries: dict[str, list[float]] = {}
        for _ in range(args.queries):
            for kind, make in kinds.items():
                queries.setdefault(kind, []).append(
                    await timed(
                        http,
                        "/v1/search",
                        {"query": make(args.query_chars), "scope": butler, "limit": 10},
                    )
                )
    print(
        f"\none POST /v1/episodes, median of {args.repeat}, seconds"
        + (" (floor: the model alone on its text and passages)" if floor else "")
        + "\n"
    )
    print("| characters | " + " | ".join(kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for size in sizes:
        print(
            f"| {size:,} | "
            + " | ".join(
                f"{statistics.median(taken[(kind, size)]):.2f}"
                + (f" (floor {statistics.median(floor[(kind, size)]):.2f})" if floor else "")
                for kind in kinds
            )
            + " |"
        )
    print(
        f"\none POST /v1/search of {args.query_chars:,} characters, median of "
        f"{args.queries}, seconds\n"
    )
    print("| " + " | ".join(kinds) + " |\n|" + "---|" * len(kinds))
    print("| " + " | ".join(f"{statistics.median(queries[kind]):.2f}" for kind in kinds) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8732")
    parser.add_argument("--xquad", default="../shared/data/xquad")
    parser.add_argument("--max-chars", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--queries", type=int, default=3)
    parser.add_argument("--query-chars", type=int, default=4_000)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--floor",
        action="store_true",
        help="time the model alone on each write's texts, in this process",
    )
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
