"""What a write and a search cost on a large store, for English text and for text written
without spaces (Chinese), with the model alone beside them as the floor.

Against a running server whose store was seeded with `seed_sql.py` (English sentences in the
butlers of `common/texts.py`). It first stores `--seed-zh` Chinese sentences (XQuAD's Chinese
paragraphs cut at sentence ends, repeated as needed) in a butler of their own through the
batch endpoint, untimed (give `--zh-butler` and `--seed-zh 0` to measure again on them).
Then, one request at a time, in turns of the two languages:
`--writes` single episodes (new sentences) and `--searches` hybrid searches scoped to the
language's butler (`common/texts.py`'s questions; XQuAD's Chinese questions). The model alone
is timed in this process on the same texts (the packaged model, one text a call).

    python -m bench.speed.language_cost --base-url http://127.0.0.1:8803 \\
        --xquad ../shared/data/xquad --seed-zh 10000
"""

import argparse
import asyncio
import random
import re
import statistics
import time
import uuid
from pathlib import Path

import httpx

from app.embedding import Embedder
from bench.common.texts import question, sentence
from bench.quality.xquad_recall import paragraphs_and_questions

SENTENCE_END = re.compile(r"(?<=[。！？])")


def chinese_sentences(xquad: Path) -> tuple[list[str], list[str]]:
    """XQuAD's Chinese paragraphs cut into sentences of at least 8 characters, and its
    Chinese questions."""
    paragraphs, questions = paragraphs_and_questions(xquad / "xquad.zh.json")
    sentences = [
        part.strip()
        for paragraph in paragraphs
        for part in SENTENCE_END.split(paragraph)
        if len(part.strip()) >= 8
    ]
    return sentences, [text for text, _ in questions]


def ms(samples: list[float]) -> str:
    """p50 / p95 in ms."""
    ordered = sorted(samples)
    return (
        f"{statistics.median(ordered) * 1000:.1f} / "
        f"{ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000:.1f}"
    )


async def timed(http: httpx.AsyncClient, path: str, body: dict[str, object]) -> float:
    """Seconds of one POST, which must succeed."""
    began = time.perf_counter()
    response = await http.post(path, json=body)
    elapsed = time.perf_counter() - began
    response.raise_for_status()
    return elapsed


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    sentences, zh_questions = chinese_sentences(Path(args.xquad))
    rng.shuffle(sentences)
    zh_butler = args.zh_butler or f"zh-{uuid.uuid4().hex[:6]}"
    writes = {
        "en": [f"{sentence(rng)}" for _ in range(args.writes)],
        "zh": [sentences[i % len(sentences)] + f"（{i}）" for i in range(args.writes)],
    }
    searches = {
        "en": [question(rng, 10_000 + i) for i in range(args.searches)],
        "zh": [zh_questions[i % len(zh_questions)] for i in range(args.searches)],
    }
    butler = {"en": "chat", "zh": zh_butler}
    async with httpx.AsyncClient(base_url=args.base_url, timeout=120) as http:
        began = time.perf_counter()
        for first in range(0, args.seed_zh, 200):
            items = [
                {
                    "content": sentences[(first + n) % len(sentences)] + f"（{first + n}）",
                    "butler": zh_butler,
                }
                for n in range(min(200, args.seed_zh - first))
            ]
            (await http.post("/v1/episodes/batch", json={"items": items})).raise_for_status()
        print(f"stored {args.seed_zh} Chinese sentences in {time.perf_counter() - began:.0f} s")
        for language in ("en", "zh"):  # warm the statements of both
            for text in searches[language][:10]:
                await timed(http, "/v1/search", {"query": text, "scope": butler[language]})
        taken: dict[tuple[str, str], list[float]] = {}
        for index in range(max(args.writes, args.searches)):
            for language in ("en", "zh"):
                if index < args.writes:
                    taken.setdefault(("write", language), []).append(
                        await timed(
                            http,
                            "/v1/episodes",
                            {"content": writes[language][index], "butler": butler[language]},
                        )
                    )
                if index < args.searches:
                    taken.setdefault(("search", language), []).append(
                        await timed(
                            http,
                            "/v1/search",
                            {
                                "query": searches[language][index],
                                "scope": butler[language],
                                "limit": 10,
                            },
                        )
                    )
    embedder = Embedder()
    embedder.load()
    for language in ("en", "zh"):
        for kind, texts, query in (
            ("write", writes[language], False),
            ("search", searches[language], True),
        ):
            floor = []
            for text in texts:
                began = time.perf_counter()
                embedder.embed(text, query=query)
                floor.append(time.perf_counter() - began)
            taken[(f"model, {kind}", language)] = floor
    print(
        f"\n{args.writes} writes and {args.searches} searches per language, one at a time, "
        "the two languages in turns\n"
    )
    print("| p50 / p95, ms | English | Chinese |\n|---|---|---|")
    for kind in ("write", "model, write", "search", "model, search"):
        print(f"| {kind} | {ms(taken[(kind, 'en')])} | {ms(taken[(kind, 'zh')])} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8803")
    parser.add_argument("--xquad", default="../shared/data/xquad")
    parser.add_argument(
        "--seed-zh",
        type=int,
        default=10_000,
        help="Chinese sentences stored first (0: the butler holds them)",
    )
    parser.add_argument(
        "--zh-butler", default=None, help="the butler of the Chinese sentences (default: a new one)"
    )
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--seed", type=int, default=3)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
