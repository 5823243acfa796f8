"""Retrieval quality on LongMemEval_S: turn-level recall@10 of POST /v1/search per type.

Each question's haystack (about 48 sessions, 490 user and assistant turns) is stored as
episodes of a butler of its own through POST /v1/episodes/batch, every turn as
`user: <content>` or `assistant: <content>` (no dates in the text) with its turn id
`<session_id>_<index from 1>` in metadata. The question is then asked through
POST /v1/search (types=[episode], scope=that butler, limit 10) in each mode, and
recall@10 = |evidence turns (has_answer) in the top 10| / |evidence turns|, averaged over the
questions that have evidence turns (see the data set's README).

    python -m bench.quality.longmemeval_recall /work/shared/data/longmemeval \
        --base-url http://127.0.0.1:8000

`--with-time` sends each session's date as the episode's `occurred_at`, but only when the
server's episode schema has that field (checked in /openapi.json); otherwise it says so and
stores the turns without it. `--query-style keywords` asks each question as the short keyword
query an agent would send (`keyword_query` in locomo_recall.py).

Needs a running Engram (`engram serve`); it only talks HTTP to it.
"""

import argparse
import asyncio
import gzip
import json
import sys
import time
import uuid
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.quality.locomo_recall import embedded, query_text, reuse_or_refuse

MODES = ("semantic", "keyword", "hybrid")
K = 10
BATCH = 200
MAX_CONTENT_CHARS = 50_000  # the API's bound; the longest turn of the dev set is ~15,000


def session_time(date: str) -> str:
    """'2023/05/20 (Sat) 02:21' as ISO 8601 (UTC)."""
    return datetime.strptime(date, "%Y/%m/%d (%a) %H:%M").strftime("%Y-%m-%dT%H:%M:00+00:00")


def haystack_turns(question: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(turn id, content, session date, is evidence) of every turn, in order."""
    turns = []
    for session_id, date, session in zip(
        question["haystack_session_ids"],
        question["haystack_dates"],
        question["haystack_sessions"],
        strict=True,
    ):
        for index, turn in enumerate(session, start=1):
            content = f"{turn['role']}: {turn['content']}"[:MAX_CONTENT_CHARS]
            turns.append((f"{session_id}_{index}", content, date, bool(turn.get("has_answer"))))
    return turns


def first_of_each_type(data: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """The first `n` questions of every question type, in file order."""
    taken: dict[str, int] = defaultdict(int)
    kept = []
    for question in data:
        if taken[question["question_type"]] < n:
            taken[question["question_type"]] += 1
            kept.append(question)
    return kept


async def episode_has_occurred_at(http: httpx.AsyncClient) -> bool:
    """Whether the server's EpisodeCreate schema accepts `occurred_at`."""
    schema = (await http.get("/openapi.json")).json()
    fields = schema.get("components", {}).get("schemas", {}).get("EpisodeCreate", {})
    return "occurred_at" in fields.get("properties", {})


async def ingest(
    http: httpx.AsyncClient,
    scope: str,
    turns: list[tuple[str, str, str, bool]],
    *,
    with_time: bool,
    sessions: bool,
) -> float:
    """Store the turns as episodes of `scope`; returns seconds spent."""
    start = time.perf_counter()
    for i in range(0, len(turns), BATCH):
        items = []
        for turn_id, content, date, _ in turns[i : i + BATCH]:
            item: dict[str, Any] = {
                "content": content,
                "butler": scope,
                "metadata": {"turn_id": turn_id},
            }
            if with_time:
                item["occurred_at"] = session_time(date)
            if sessions:
                session = turn_id.rsplit("_", 1)[0]
                item["session_id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{scope}/{session}"))
            items.append(item)
        response = await http.post("/v1/episodes/batch", json={"items": items})
        response.raise_for_status()
    return time.perf_counter() - start


async def ask(
    http: httpx.AsyncClient,
    *,
    question: str,
    scope: str,
    mode: str,
    asked_at: str | None = None,
    fusion: str | None = None,
) -> list[str]:
    """The turn ids of the search results, best first; `asked_at` is the reference time."""
    extra: dict[str, Any] = {"reference_time": asked_at} if asked_at else {}
    if fusion:
        extra["fusion"] = fusion
    response = await http.post(
        "/v1/search",
        json={
            **extra,
            "query": question,
            "types": ["episode"],
            "scope": scope,
            "mode": mode,
            "limit": K,
        },
    )
    response.raise_for_status()
    return [hit["metadata"].get("turn_id", "") for hit in response.json()["results"]]


async def run(args: argparse.Namespace) -> None:
    with gzip.open(args.data, "rt") as handle:
        data = json.load(handle)
    if args.per_type:
        data = first_of_each_type(data, args.per_type)
    recall: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in args.modes}
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=args.base_url, timeout=300) as http:
        with_time = args.with_time and await episode_has_occurred_at(http)
        if args.with_time and not with_time:
            print(
                "the server's episodes have no occurred_at: storing without time", file=sys.stderr
            )
        for question in data:
            scope = f"lme-{question['question_id']}{'-t' if with_time else ''}{args.scope_suffix}"
            turns = haystack_turns(question)
            evidence = {turn_id for turn_id, _, _, is_evidence in turns if is_evidence}
            if not evidence:
                continue
            if await reuse_or_refuse(http, scope, len(turns), args.reuse):
                print(f"{scope}: reusing stored turns", file=sys.stderr)
            else:
                seconds = await ingest(
                    http, scope, turns, with_time=with_time, sessions=args.sessions
                )
                print(f"{scope}: stored {len(turns)} turns in {seconds:.1f}s", file=sys.stderr)
            await embedded(http)
            for mode in args.modes:
                start = time.perf_counter()
                found = await ask(
                    http,
                    question=query_text(question["question"], args.query_style),
                    scope=scope,
                    mode=mode,
                    asked_at=session_time(question["question_date"]) if with_time else None,
                    fusion=args.fusion,
                )
                latencies.append(time.perf_counter() - start)
                hits = len(evidence & set(found[:K]))
                recall[mode][question["question_type"]].append(hits / len(evidence))
    report(recall, args.modes)
    latencies.sort()
    if latencies:
        print(f"\n{len(latencies)} searches, median {1000 * latencies[len(latencies) // 2]:.1f} ms")


def report(recall: dict[str, dict[str, list[float]]], modes: list[str]) -> None:
    """Print turn-level recall@10 per question type and overall for each mode."""
    print(f"\n{'mode':<9} {'question type':<26} {'n':>3} {'R@' + str(K):>6}")
    for mode in modes:
        overall: list[float] = []
        for question_type in sorted(recall[mode]):
            scores = recall[mode][question_type]
            overall.extend(scores)
            print(
                f"{mode:<9} {question_type:<26} {len(scores):>3} {sum(scores) / len(scores):6.3f}"
            )
        print(
            f"{mode:<9} {'overall':<26} {len(overall):>3} "
            f"{sum(overall) / max(len(overall), 1):6.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", help="path to longmemeval_s_dev.json.gz (or its directory)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument(
        "--per-type", type=int, default=0, help="only the first N questions of each type"
    )
    parser.add_argument(
        "--with-time",
        action="store_true",
        help="send session dates as occurred_at (if the server has it)",
    )
    parser.add_argument(
        "--sessions", action="store_true", help="give each haystack session its own session_id"
    )
    parser.add_argument(
        "--fusion",
        choices=("learned", "rrf", "weighted"),
        default=None,
        help="hybrid fusion (default: the server's)",
    )
    parser.add_argument("--scope-suffix", default="", help="store under fresh scopes")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="skip ingest when the butler already holds all the turns",
    )
    parser.add_argument(
        "--query-style",
        choices=("question", "keywords"),
        default="question",
        help="question: as written; keywords: an agent's short keyword query",
    )
    args = parser.parse_args()
    if Path(args.data).is_dir():
        args.data = str(Path(args.data) / "longmemeval_s_dev.json.gz")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
