"""Retrieval quality on LoCoMo memories of other shapes: observations as facts, session
summaries as notes; recall@5 and recall@10 of POST /v1/search per category.

`--shape observations`: every sentence of each conversation's `observation` lists is stored as
a fact through POST /v1/facts/bulk: subject = the speaker it is about, predicate
`observation <session>.<index>` (one key per sentence, so that no sentence supersedes another),
content = the sentence, scope = the conversation's butler, `valid_from` = the session's date,
the dia_ids it cites in metadata. Questions are asked with types=[fact].

`--shape summaries`: each `session_summary` text is stored whole as one episode (a note: no
session id, `occurred_at` = the session's date), as a caller keeping one summary per
conversation session would. Questions are asked with types=[episode].

Every question of categories 1-4 is asked in each mode (`--fusion` picks hybrid's fusion) at the
conversation's last date (`reference_time`). recall@k = the fraction of its evidence dia_ids
cited by at least one of the top k memories; a summary cites every turn of its session.

    python -m bench.quality.locomo_shapes /work/shared/data/locomo/locomo_dev.json \
        --base-url http://127.0.0.1:8000 --shape observations --fusion learned

Needs a running Engram (`engram serve`); it only talks HTTP to it. `--reuse` asks again
against memories stored by an earlier run.
"""

import argparse
import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from bench.quality.locomo_recall import (
    CATEGORIES,
    KS,
    MODES,
    evidence_ids,
    query_text,
    report,
    session_time,
    session_turns,
)

FACT_BATCH = 100  # the bulk endpoint's bound


def session_of(dia_id: str) -> int | None:
    """The session number of a LoCoMo dia_id ("D8:6" -> 8), None if it has none."""
    match = re.fullmatch(r"D(\d+):\d+", dia_id)
    return int(match.group(1)) if match else None


def cited_ids(citation: str | list[str]) -> list[str]:
    """An observation's evidence ("D1:3", "D1:3; D1:5" or a list of them) as dia_ids."""
    parts = citation if isinstance(citation, list) else [citation]
    return [p for part in parts for p in re.split(r"[;,\s]+", str(part)) if p]


def observation_facts(
    conv: dict[str, Any], observations: dict[str, Any], scope: str
) -> list[dict[str, Any]]:
    """Every observation sentence of a conversation as a FactCreate body, in session order."""
    facts = []
    numbered = sorted(
        (int(m.group(1)), key)
        for key in observations
        if (m := re.fullmatch(r"session_(\d+)_observation", key))
    )
    for number, key in numbered:
        valid_from = session_time(conv.get(f"session_{number}_date_time", ""))
        index = 0
        for speaker, sentences in observations[key].items():
            for sentence, citation in sentences:
                index += 1
                fact: dict[str, Any] = {
                    "subject": speaker,
                    "predicate": f"observation {number}.{index}",
                    "content": sentence,
                    "scope": scope,
                    "metadata": {"dia_ids": cited_ids(citation), "session": number},
                }
                if valid_from:
                    fact["valid_from"] = valid_from
                facts.append(fact)
    return facts


def summary_notes(
    conv: dict[str, Any], summaries: dict[str, str], scope: str
) -> list[dict[str, Any]]:
    """Every session summary of a conversation as an EpisodeCreate body (no session id)."""
    notes = []
    numbered = sorted(
        (int(m.group(1)), key)
        for key in summaries
        if (m := re.fullmatch(r"session_(\d+)_summary", key))
    )
    for number, key in numbered:
        note: dict[str, Any] = {
            "content": summaries[key],
            "butler": scope,
            "metadata": {"session": number},
        }
        if occurred := session_time(conv.get(f"session_{number}_date_time", "")):
            note["occurred_at"] = occurred
        notes.append(note)
    return notes


def hit_citations(metadata: dict[str, Any]) -> set[str]:
    """What one search hit cites: its dia_ids, or "S<n>" for a summary of session n."""
    if "dia_ids" in metadata:
        return set(metadata["dia_ids"])
    if "session" in metadata:
        return {f"S{metadata['session']}"}
    return set()


def cited_recall(evidence: list[str], hits: list[set[str]], k: int) -> float:
    """The fraction of the evidence dia_ids cited by at least one of the top `k` hits; a hit
    citing "S<n>" (a session summary) cites every dia_id of session n."""
    cited = set().union(*hits[:k]) if hits[:k] else set()
    covered = sum(1 for e in evidence if e in cited or f"S{session_of(e)}" in cited)
    return covered / len(evidence) if evidence else 0.0


async def stored_count(http: httpx.AsyncClient, shape: str, scope: str) -> int:
    """How many memories of the shape the scope holds."""
    path, params = (
        ("/v1/facts", {"scope": scope})
        if shape == "observations"
        else ("/v1/episodes", {"butler": scope})
    )
    count, cursor = 0, None
    while True:
        page_params: dict[str, Any] = {**params, "limit": 200}
        if cursor:
            page_params["cursor"] = cursor
        response = await http.get(path, params=page_params)
        response.raise_for_status()
        page = response.json()
        count += len(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return count


async def store(http: httpx.AsyncClient, shape: str, items: list[dict[str, Any]]) -> float:
    """Store the facts or notes; returns seconds spent."""
    start = time.perf_counter()
    path, batch = (
        ("/v1/facts/bulk", FACT_BATCH) if shape == "observations" else ("/v1/episodes/batch", 200)
    )
    for i in range(0, len(items), batch):
        response = await http.post(path, json={"items": items[i : i + batch]})
        response.raise_for_status()
    return time.perf_counter() - start


async def run(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.data).read_text())
    if args.conversations:
        data = data[: args.conversations]
    memory_type = "fact" if args.shape == "observations" else "episode"
    recall: dict[str, dict[int, dict[int, list[float]]]] = {
        m: defaultdict(lambda: defaultdict(list)) for m in args.modes
    }
    async with httpx.AsyncClient(base_url=args.base_url, timeout=120) as http:
        for sample in data:
            conv = sample["conversation"]
            scope = f"locomo-{sample['sample_id']}-{args.shape}{args.scope_suffix}"
            items = (
                observation_facts(conv, sample["observation"], scope)
                if args.shape == "observations"
                else summary_notes(conv, sample["session_summary"], scope)
            )
            held = await stored_count(http, args.shape, scope)
            if args.reuse and held == len(items):
                print(f"{scope}: reusing {held} stored memories", file=sys.stderr)
            elif held:
                raise SystemExit(
                    f"{scope} already holds {held} memories: pick a new --scope-suffix or --reuse"
                )
            else:
                seconds = await store(http, args.shape, items)
                print(
                    f"{scope}: stored {len(items)} {args.shape} in {seconds:.1f}s", file=sys.stderr
                )
            turns = session_turns(conv, "plain")
            known = {turn[0] for turn in turns}
            extra: dict[str, Any] = {"fusion": args.fusion} if args.fusion else {}
            if last_date := session_time(turns[-1][3]):
                extra["reference_time"] = last_date
            for qa in sample["qa"]:
                if qa.get("category") not in CATEGORIES:
                    continue
                evidence = evidence_ids(qa, known)
                if not evidence:
                    continue
                for mode in args.modes:
                    response = await http.post(
                        "/v1/search",
                        json={
                            "query": query_text(qa["question"], args.query_style),
                            "types": [memory_type],
                            "scope": scope,
                            "mode": mode,
                            "limit": max(KS),
                            **extra,
                        },
                    )
                    response.raise_for_status()
                    hits = [
                        hit_citations(hit.get("metadata") or {})
                        for hit in response.json()["results"]
                    ]
                    for k in KS:
                        recall[mode][qa["category"]][k].append(cited_recall(evidence, hits, k))
    args.turn_format = args.shape
    report(recall, args)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", help="path to locomo_dev.json (or its directory)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--shape", choices=("observations", "summaries"), required=True)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--scope-suffix", default="", help="store under fresh scopes")
    parser.add_argument(
        "--fusion",
        choices=("learned", "rrf", "weighted"),
        default=None,
        help="hybrid fusion (default: the server's)",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="ask again against the memories an earlier run stored"
    )
    parser.add_argument(
        "--query-style",
        choices=("question", "keywords"),
        default="question",
        help="question: as written; keywords: an agent's short keyword query",
    )
    args = parser.parse_args()
    if Path(args.data).is_dir():
        args.data = str(Path(args.data) / "locomo_dev.json")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
