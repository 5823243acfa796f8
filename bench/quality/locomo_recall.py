"""Retrieval quality on LoCoMo: recall@5 and recall@10 of POST /v1/search per category.

Each conversation's turns are stored as episodes of one scope (butler) through
POST /v1/episodes/batch, then every question of categories 1-4 is asked through
POST /v1/search (types=[episode], scope=that conversation) in each mode.
recall@k = |evidence dia_ids in the top k| / |evidence dia_ids|, averaged over questions
(the LoCoMo paper's definition; see the data set's README).

    python -m bench.quality.locomo_recall /work/shared/data/locomo/locomo_dev.json \
        --base-url http://127.0.0.1:8000 --turn-format plain --with-time --sessions

`--with-time` stores each LoCoMo session's date as its turns' `occurred_at` and asks at the
conversation's last date (`reference_time`); `--sessions` gives each LoCoMo session its own
`session_id`, as a chat client would. `--query-style keywords` asks each question as the short
keyword query an agent would send instead (see `keyword_query`).

Needs a running Engram (`engram serve`); it only talks HTTP to it.
"""

import argparse
import asyncio
import json
import re
import sys
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("semantic", "keyword", "hybrid")
KS = (5, 10)
BATCH = 200
KEYWORD_QUERY_WORDS = 6
# Question words, auxiliaries, pronouns, articles, prepositions and conjunctions: the words an
# agent leaves out when it turns a question into a search.
QUERY_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be been before being below
    between both but by can could did do does doing done down during each ever few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just kind me might more most much my myself no nor not of off on once only or
    other our ours ourselves out over own same shall she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very
    was we were what whats when where which while who whom whose why will with would you your
    yours yourself yourselves s t d ll m re ve
    """.split()
)


def turn_text(turn: dict[str, Any], date: str, turn_format: str) -> str:
    """The episode content of one turn in the chosen format."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn_format in ("caption", "dated") and turn.get("blip_caption"):
        text += f" [shares a photo of {turn['blip_caption']}]"
    if turn_format == "dated":
        text = f"[{date}] {text}"
    return text


def keyword_query(question: str, max_words: int = KEYWORD_QUERY_WORDS) -> str:
    """The question as an agent's keyword query: lowercased, split into words (letters, digits,
    inner hyphens; an apostrophe ends a word, so "Melanie's" gives "melanie"), question words
    and other stopwords (QUERY_STOPWORDS) dropped, repeats dropped, the first `max_words` kept
    in question order; the lowercased question itself if no word is left."""
    words: list[str] = []
    for word in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", question.lower()):
        if word not in QUERY_STOPWORDS and word not in words:
            words.append(word)
    return " ".join(words[:max_words]) or question.lower().strip()


def query_text(question: str, style: str) -> str:
    """What is sent as the search query for `question` in the given query style."""
    return keyword_query(question) if style == "keywords" else question


def conversation_turns(conv: dict[str, Any], turn_format: str) -> list[tuple[str, str]]:
    """(dia_id, content) of every turn, in order."""
    return [(dia_id, content) for dia_id, content, _, _ in session_turns(conv, turn_format)]


def session_turns(conv: dict[str, Any], turn_format: str) -> list[tuple[str, str, int, str]]:
    """(dia_id, content, session number, session date text) of every turn, in order."""
    turns = []
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := re.fullmatch(r"session_(\d+)", key))
    )
    for number, key in sessions:
        date = conv.get(f"session_{number}_date_time", "")
        for turn in conv[key]:
            turns.append((turn["dia_id"], turn_text(turn, date, turn_format), number, date))
    return turns


def session_time(date: str) -> str | None:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as ISO 8601 UTC, None if unreadable."""
    try:
        parsed = datetime.strptime(date.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC).isoformat()


def evidence_ids(qa: dict[str, Any], known: set[str]) -> list[str]:
    """Evidence dia_ids normalised ("D8:6; D9:17" split), unknown ones dropped."""
    ids: list[str] = []
    for item in qa.get("evidence", []):
        for part in re.split(r"[;,\s]+", str(item)):
            if part in known and part not in ids:
                ids.append(part)
    return ids


async def reuse_or_refuse(http: httpx.AsyncClient, scope: str, expected: int, reuse: bool) -> bool:
    """True to reuse the butler's stored turns (`reuse` and all of them there), False to store
    them into an empty butler; exits when the butler holds other episodes, which a second
    ingest would duplicate."""
    held = await stored_turns(http, scope)
    if reuse and held == expected:
        return True
    if held:
        raise SystemExit(
            f"butler {scope} already holds {held} episodes (expected {expected} "
            "for --reuse): pick a new --scope-suffix"
        )
    return False


async def embedded(http: httpx.AsyncClient, bound: float = 1800) -> float:
    """Wait until no stored memory waits for its vectors (a remote embedding model defers the
    writes it cannot answer in time); the seconds it took."""
    began = time.perf_counter()
    while time.perf_counter() - began < bound:
        waiting = (await http.get("/readyz")).json().get("embedding_backlog")
        if not waiting:
            return time.perf_counter() - began
        await asyncio.sleep(1)
    raise SystemExit(f"memories still wait for their vectors after {bound:.0f} s")


async def stored_turns(http: httpx.AsyncClient, scope: str) -> int:
    """How many episodes the butler `scope` holds."""
    count, cursor = 0, None
    while True:
        params: dict[str, Any] = {"butler": scope, "limit": 200}
        if cursor:
            params["cursor"] = cursor
        page = (await http.get("/v1/episodes", params=params)).json()
        count += len(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return count


async def ingest(
    http: httpx.AsyncClient,
    scope: str,
    turns: list[tuple[str, str, int, str]],
    *,
    with_time: bool,
    sessions: bool,
) -> float:
    """Store the turns as episodes of `scope`; returns seconds spent."""
    start = time.perf_counter()
    for i in range(0, len(turns), BATCH):
        items = []
        for dia_id, content, number, date in turns[i : i + BATCH]:
            item: dict[str, Any] = {
                "content": content,
                "butler": scope,
                "metadata": {"dia_id": dia_id},
            }
            if with_time and (occurred := session_time(date)):
                item["occurred_at"] = occurred
            if sessions:
                item["session_id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{scope}/{number}"))
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
    limit: int,
    extra: dict[str, Any],
) -> list[str]:
    """The dia_ids of the search results, best first."""
    response = await http.post(
        "/v1/search",
        json={
            "query": question,
            "types": ["episode"],
            "scope": scope,
            "mode": mode,
            "limit": limit,
            **extra,
        },
    )
    response.raise_for_status()
    return [hit["metadata"].get("dia_id", "") for hit in response.json()["results"]]


async def run(args: argparse.Namespace) -> None:
    data = json.loads(Path(args.data).read_text())
    if args.conversations:
        data = data[: args.conversations]
    # recall[mode][category][k] -> list of per-question recalls
    recall: dict[str, dict[int, dict[int, list[float]]]] = {
        m: defaultdict(lambda: defaultdict(list)) for m in args.modes
    }
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=args.base_url, timeout=120) as http:
        for sample in data:
            scope = f"locomo-{sample['sample_id']}-{args.turn_format}{args.scope_suffix}"
            turns = session_turns(sample["conversation"], args.turn_format)
            if await reuse_or_refuse(http, scope, len(turns), args.reuse):
                print(f"{scope}: reusing stored turns", file=sys.stderr)
            else:
                seconds = await ingest(
                    http, scope, turns, with_time=args.with_time, sessions=args.sessions
                )
                print(f"{scope}: stored {len(turns)} turns in {seconds:.1f}s", file=sys.stderr)
            waited = await embedded(http)
            if waited >= 1:
                print(
                    f"{scope}: every memory had its vectors {waited:.0f} s later", file=sys.stderr
                )
            known = {turn[0] for turn in turns}
            extra: dict[str, Any] = {"fusion": args.fusion} if args.fusion else {}
            last_date = session_time(turns[-1][3]) if args.with_time else None
            if last_date:
                extra["reference_time"] = last_date
            for qa in sample["qa"]:
                if qa.get("category") not in CATEGORIES:
                    continue
                evidence = evidence_ids(qa, known)
                if not evidence:
                    continue
                for mode in args.modes:
                    start = time.perf_counter()
                    found = await ask(
                        http,
                        question=query_text(qa["question"], args.query_style),
                        scope=scope,
                        mode=mode,
                        limit=max(KS),
                        extra=extra,
                    )
                    latencies.append(time.perf_counter() - start)
                    for k in KS:
                        hits = sum(1 for e in evidence if e in found[:k])
                        recall[mode][qa["category"]][k].append(hits / len(evidence))
    report(recall, args)
    latencies.sort()
    print(f"\n{len(latencies)} searches, median {1000 * latencies[len(latencies) // 2]:.1f} ms")


def report(recall: dict[str, dict[int, dict[int, list[float]]]], args: argparse.Namespace) -> None:
    """Print recall@k per category and overall for each mode."""
    print(f"\nturn format: {args.turn_format}, query style: {args.query_style}")
    header = f"{'mode':<9} {'category':<12} {'n':>4} " + " ".join(f"{'R@' + str(k):>6}" for k in KS)
    print(header)
    for mode in args.modes:
        overall: dict[int, list[float]] = defaultdict(list)
        for category, name in CATEGORIES.items():
            scores = recall[mode][category]
            n = len(scores[KS[0]])
            cells = " ".join(f"{sum(scores[k]) / max(n, 1):6.3f}" for k in KS)
            print(f"{mode:<9} {name:<12} {n:>4} {cells}")
            for k in KS:
                overall[k].extend(scores[k])
        n = len(overall[KS[0]])
        cells = " ".join(f"{sum(overall[k]) / max(n, 1):6.3f}" for k in KS)
        print(f"{mode:<9} {'overall':<12} {n:>4} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", help="path to locomo_dev.json (or its directory)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument(
        "--turn-format",
        choices=("plain", "caption", "dated"),
        default="dated",
        help="plain: 'speaker: text'; caption: + shared photo caption; "
        "dated: + '[session date]' prefix",
    )
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--conversations", type=int, default=0, help="only the first N")
    parser.add_argument("--scope-suffix", default="", help="store under fresh scopes")
    parser.add_argument(
        "--with-time",
        action="store_true",
        help="send session dates as occurred_at; ask at the last date",
    )
    parser.add_argument(
        "--sessions", action="store_true", help="give each LoCoMo session its own session_id"
    )
    parser.add_argument(
        "--fusion",
        choices=("learned", "rrf", "weighted"),
        default=None,
        help="hybrid fusion (default: the server's)",
    )
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
        args.data = str(Path(args.data) / "locomo_dev.json")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
