"""Retrieval quality across languages on XQuAD: R@1 and R@5 of POST /v1/search per language
and mode.

Each language's 240 paragraphs are stored as episodes of one scope (butler
`xquad-<lang><suffix>`) through POST /v1/episodes/batch, then each of its questions is asked
through POST /v1/search (types=[episode], scope=that butler) in each mode; a question scores
when the paragraph it was written from is first (R@1) or in the first five (R@5).

    python -m bench.quality.xquad_recall ../shared/data/xquad --languages en de es ru zh \
        --base-url http://127.0.0.1:8000 --questions 300

Needs a running Engram (`engram serve`); it only talks HTTP to it.
"""

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import httpx

from bench.quality.locomo_recall import stored_turns

MODES = ("hybrid", "keyword", "semantic")
KS = (1, 5)
BATCH = 40


def paragraphs_and_questions(path: Path) -> tuple[list[str], list[tuple[str, int]]]:
    """The paragraphs in file order, and each question with its paragraph's index."""
    data = json.loads(path.read_text())["data"]
    paragraphs: list[str] = []
    questions: list[tuple[str, int]] = []
    for article in data:
        for paragraph in article["paragraphs"]:
            index = len(paragraphs)
            paragraphs.append(paragraph["context"])
            questions += [(qa["question"], index) for qa in paragraph["qas"]]
    return paragraphs, questions


async def ingest(http: httpx.AsyncClient, scope: str, paragraphs: list[str]) -> float:
    """Store the paragraphs as episodes of `scope`; the seconds it took."""
    start = time.perf_counter()
    for first in range(0, len(paragraphs), BATCH):
        items = [
            {"content": text, "butler": scope, "metadata": {"paragraph": first + number}}
            for number, text in enumerate(paragraphs[first : first + BATCH])
        ]
        response = await http.post("/v1/episodes/batch", json={"items": items})
        response.raise_for_status()
    return time.perf_counter() - start


async def ask(http: httpx.AsyncClient, question: str, scope: str, mode: str) -> list[int]:
    """The paragraph indexes of the first five results, best first."""
    response = await http.post(
        "/v1/search",
        json={
            "query": question,
            "types": ["episode"],
            "scope": scope,
            "mode": mode,
            "limit": max(KS),
        },
    )
    response.raise_for_status()
    return [hit["metadata"].get("paragraph", -1) for hit in response.json()["results"]]


async def measure(
    http: httpx.AsyncClient,
    language: str,
    args: argparse.Namespace,
) -> dict[str, dict[int, float]]:
    """R@k per mode for one language."""
    paragraphs, questions = paragraphs_and_questions(Path(args.data) / f"xquad.{language}.json")
    scope = f"xquad-{language}{args.scope_suffix}"
    held = await stored_turns(http, scope)
    if held == len(paragraphs):
        print(f"{scope}: reusing {held} stored paragraphs", file=sys.stderr)
    elif held:
        raise SystemExit(f"butler {scope} holds {held} episodes: pick a new --scope-suffix")
    else:
        seconds = await ingest(http, scope, paragraphs)
        print(f"{scope}: stored {len(paragraphs)} paragraphs in {seconds:.1f}s", file=sys.stderr)
    if args.questions:
        # Every n-th question, so a sample spans every article.
        step = max(1, len(questions) // args.questions)
        questions = questions[::step][: args.questions]
    hits = {mode: dict.fromkeys(KS, 0) for mode in args.modes}
    gate = asyncio.Semaphore(args.concurrency)

    async def one(question: str, answer: int, mode: str) -> None:
        async with gate:
            found = await ask(http, question, scope, mode)
        for k in KS:
            hits[mode][k] += answer in found[:k]

    await asyncio.gather(
        *(one(question, answer, mode) for question, answer in questions for mode in args.modes)
    )
    return {mode: {k: hits[mode][k] / len(questions) for k in KS} for mode in args.modes}


async def run(args: argparse.Namespace) -> None:
    results: dict[str, dict[str, dict[int, float]]] = {}
    async with httpx.AsyncClient(base_url=args.base_url, timeout=900) as http:
        for language in args.languages:
            start = time.perf_counter()
            results[language] = await measure(http, language, args)
            print(f"{language}: {time.perf_counter() - start:.0f}s", file=sys.stderr)
    header = "| language | " + " | ".join(f"{mode} R@{k}" for mode in args.modes for k in KS) + " |"
    print(header)
    print("|" + "---|" * (1 + len(args.modes) * len(KS)))
    for language, by_mode in results.items():
        print(
            f"| {language} | "
            + " | ".join(f"{by_mode[mode][k]:.3f}" for mode in args.modes for k in KS)
            + " |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", help="the folder holding xquad.<lang>.json")
    parser.add_argument("--languages", nargs="+", default=["en", "de", "es", "ru", "zh"])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--questions",
        type=int,
        default=0,
        help="ask about this many questions per language (0: all 1,190)",
    )
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--scope-suffix", default="", help="store under fresh scopes")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
