"""The fusion study's data: each benchmark question with its scope's turns, their vectors and
lexemes, computed once and cached, so ranking ideas can be tried in seconds.

A turn is stored as the service stores it (`speaker: text`, its session, its time); its
vectors are the service's: the turn itself, its window passages (long turns) and its context
passage (the turns before it in its session), made by the service's own text functions and
model. Lexemes come from PostgreSQL's `to_tsvector('english', ...)`, as the keyword index reads
them. Nothing here talks to a running Engram.

    python -m bench.study.study_data --cache /tmp/study-cache     # fills the cache

The cache holds vectors by the text's SHA-1 (`vectors.npy` + `index.json`) and lexemes
(`lexemes.json`); it is data of this machine, never committed.
"""

import argparse
import asyncio
import gzip
import hashlib
import json
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.quality.locomo_recall import keyword_query

LME_FILES = ("longmemeval_s_dev.json.gz", "longmemeval_s_dev2.json.gz")
LOCOMO_FILE = "locomo_dev.json"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
PASSAGE_CHARS, PASSAGE_OVERLAP, CONTEXT_TURNS = 800, 160, 2
SESSION_GAP_SECONDS = 15 * 60  # the service's default episode_session_gap_minutes


@dataclass
class Turn:
    """One stored turn."""

    turn_id: str
    content: str
    session: str
    occurred_at: float  # seconds since the epoch
    evidence: bool = False
    cites: frozenset[str] = frozenset()  # the turns a fact or note was drawn from
    keyword_text: str = ""  # what the keyword index reads, when not the content


@dataclass
class Question:
    """A question asked in the scope of its turns."""

    qid: str
    bench: str  # "lme" or "locomo"
    qtype: str
    text: str
    asked_at: float
    scope: str
    evidence: set[str] = field(default_factory=set)
    split: str = ""


def sha(text: str) -> str:
    """The cache key of a text."""
    return hashlib.sha1(text.encode()).hexdigest()


def _lme_time(date: str) -> float:
    return datetime.strptime(date, "%Y/%m/%d (%a) %H:%M").replace(tzinfo=UTC).timestamp()


def _locomo_time(date: str) -> float | None:
    try:
        parsed = datetime.strptime(date.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC).timestamp()


def load_lme(folder: Path) -> tuple[list[Question], dict[str, list[Turn]]]:
    """LongMemEval's questions that have evidence turns, each in a scope of its own."""
    questions, scopes = [], {}
    for name in LME_FILES:
        with gzip.open(folder / name, "rt") as handle:
            data = json.load(handle)
        for item in data:
            scope = f"lme-{item['question_id']}"
            turns = []
            for session_id, date, session in zip(
                item["haystack_session_ids"],
                item["haystack_dates"],
                item["haystack_sessions"],
                strict=True,
            ):
                for index, turn in enumerate(session, start=1):
                    turns.append(
                        Turn(
                            f"{session_id}_{index}",
                            f"{turn['role']}: {turn['content']}"[:50_000],
                            session_id,
                            _lme_time(date),
                            bool(turn.get("has_answer")),
                        )
                    )
            evidence = {t.turn_id for t in turns if t.evidence}
            if not evidence:
                continue
            scopes[scope] = turns
            questions.append(
                Question(
                    item["question_id"],
                    "lme",
                    item["question_type"],
                    item["question"],
                    _lme_time(item["question_date"]),
                    scope,
                    evidence,
                    name.split(".")[0],
                )
            )
    return questions, scopes


def _session_times(conv: dict[str, Any]) -> dict[int, float]:
    """Each session's number and time, in order (a session without a readable date takes the
    one before it)."""
    numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
    times, last = {}, 0.0
    for number in numbers:
        last = _locomo_time(conv.get(f"session_{number}_date_time", "")) or last
        times[number] = last
    return times


def _locomo_questions(
    sample: dict[str, Any], scope: str, bench: str, known: frozenset[str], asked_at: float
) -> list[Question]:
    """A conversation's questions of categories 1-4 whose evidence names `known` turns."""
    questions = []
    for index, qa in enumerate(sample["qa"]):
        if qa.get("category") not in LOCOMO_CATEGORIES:
            continue
        evidence = set()
        for item in qa.get("evidence", []):
            evidence |= {p for p in re.split(r"[;,\s]+", str(item)) if p in known}
        if evidence:
            questions.append(
                Question(
                    f"{scope}#{index}",
                    bench,
                    LOCOMO_CATEGORIES[qa["category"]],
                    str(qa["question"]),
                    asked_at,
                    scope,
                    evidence,
                )
            )
    return questions


def load_locomo(path: Path) -> tuple[list[Question], dict[str, list[Turn]]]:
    """LoCoMo's questions of categories 1-4 with evidence, asked at the conversation's end."""
    questions, scopes = [], {}
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        scope = f"locomo-{sample['sample_id']}"
        times = _session_times(conv)
        turns = [
            Turn(turn["dia_id"], f"{turn['speaker']}: {turn['text']}", f"{scope}/{number}", when)
            for number, when in times.items()
            for turn in conv[f"session_{number}"]
        ]
        scopes[scope] = turns
        questions += _locomo_questions(
            sample,
            scope,
            "locomo",
            frozenset(t.turn_id for t in turns),
            next(reversed(times.values()), 0.0),
        )
    return questions, scopes


SHAPES = ("observations", "summaries")


def load_locomo_shapes(path: Path) -> tuple[list[Question], dict[str, list[Turn]]]:
    """LoCoMo's questions asked of its observation sentences stored as facts and of its
    session summaries stored as notes (as bench/quality/locomo_shapes.py stores them), each memory
    citing the turns it was drawn from; every memory is its own session."""
    from bench.quality.locomo_shapes import cited_ids

    questions, scopes = [], {}
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        base = f"locomo-{sample['sample_id']}"
        when = _session_times(conv)
        last = next(reversed(when.values()), 0.0)
        turns_of = {n: frozenset(t["dia_id"] for t in conv[f"session_{n}"]) for n in when}
        facts: list[Turn] = []
        for key, by_speaker in sample["observation"].items():
            number = int(re.fullmatch(r"session_(\d+)_observation", key).group(1))
            index = 0
            for speaker, sentences in by_speaker.items():
                for sentence, citation in sentences:
                    index += 1
                    fact_id = f"O{number}.{index}"
                    facts.append(
                        Turn(
                            fact_id,
                            sentence,
                            f"{base}/{fact_id}",
                            when.get(number, last),
                            cites=frozenset(cited_ids(citation)),
                            keyword_text=f"{speaker} observation {number}.{index} {sentence}",
                        )
                    )
        notes = [
            Turn(
                f"S{number}",
                text,
                f"{base}/S{number}",
                when.get(number, last),
                cites=turns_of.get(number, frozenset()),
            )
            for key, text in sample["session_summary"].items()
            if (number := int(re.fullmatch(r"session_(\d+)_summary", key).group(1)))
        ]
        known = frozenset().union(*turns_of.values())
        for shape, memories in zip(SHAPES, (facts, notes), strict=True):
            scope = f"{base}#{shape}"
            scopes[scope] = memories
            questions += _locomo_questions(sample, scope, f"locomo-{shape}", known, last)
    return questions, scopes


def windows(text: str) -> list[str]:
    """The window passages the service embeds for a long text."""
    from app.core.text import split_passages

    return [text[a:b] for a, b in split_passages(text, size=PASSAGE_CHARS, overlap=PASSAGE_OVERLAP)]


def contexts(turns: list[Turn]) -> list[str | None]:
    """Each turn's context passage text (None for a session's first turn)."""
    from app.core.text import context_text

    out: list[str | None] = []
    for i, turn in enumerate(turns):
        previous = [
            t.content for t in turns[max(0, i - CONTEXT_TURNS) : i] if t.session == turn.session
        ]
        out.append(context_text(previous, turn.content) if previous else None)
    return out


class VectorCache:
    """Vectors by text SHA-1, appended to as texts are embedded."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        index_file = folder / "index.json"
        self.index: dict[str, int] = (
            json.loads(index_file.read_text()) if index_file.exists() else {}
        )
        self.vectors = (
            np.load(folder / "vectors.npy") if self.index else np.zeros((0, 384), dtype=np.float32)
        )

    def missing(self, texts: list[str]) -> list[str]:
        """The texts not cached yet, once each."""
        return list(dict.fromkeys(t for t in texts if sha(t) not in self.index))

    def add(self, texts: list[str], vectors: np.ndarray) -> None:
        start = len(self.vectors)
        self.vectors = np.concatenate([self.vectors, vectors.astype(np.float32)])
        for offset, text in enumerate(texts):
            self.index[sha(text)] = start + offset

    def save(self) -> None:
        np.save(self.folder / "vectors.npy", self.vectors)
        (self.folder / "index.json").write_text(json.dumps(self.index))

    def get(self, texts: list[str]) -> np.ndarray:
        return self.vectors[[self.index[sha(t)] for t in texts]]


class CacheSet(VectorCache):
    """Several cache folders read as one (the first holding a text wins)."""

    def __init__(self, folders: list[Path]) -> None:
        caches = [VectorCache(f) for f in folders if (f / "index.json").exists()]
        self.vectors = np.concatenate([c.vectors for c in caches])
        self.index = {}
        offset = 0
        for cache in caches:
            for key, row in cache.index.items():
                self.index.setdefault(key, offset + row)
            offset += len(cache.vectors)


def embed_all(cache: VectorCache, texts: list[str], *, label: str, chunk: int = 256) -> None:
    """Embed what is missing, saving after each chunk."""
    from app.embedding import Embedder

    todo = cache.missing(texts)
    if not todo:
        return
    embedder = Embedder()
    embedder.load()
    start = time.perf_counter()
    for i in range(0, len(todo), chunk):
        part = todo[i : i + chunk]
        cache.add(part, np.asarray(embedder.embed_batch(list(part)), dtype=np.float32))
        cache.save()
        done = i + len(part)
        rate = done / (time.perf_counter() - start)
        print(f"{label}: {done}/{len(todo)} texts, {rate:.1f}/s", file=sys.stderr, flush=True)


async def lexemes_of(texts: list[str], cache_file: Path) -> dict[str, Counter[str]]:
    """Each text's english lexemes with their position counts, by PostgreSQL."""
    import asyncpg

    from app.postgres.db import start_embedded_postgres

    known: dict[str, dict[str, int]] = (
        json.loads(cache_file.read_text()) if cache_file.exists() else {}
    )
    todo = [t for t in dict.fromkeys(texts) if sha(t) not in known]
    if todo:
        url = start_embedded_postgres(cache_file.parent / "pg")
        conn = await asyncpg.connect(url)
        try:
            for i in range(0, len(todo), 2000):
                part = todo[i : i + 2000]
                rows = await conn.fetch(
                    "SELECT t.ord, lex.lexeme, coalesce(array_length(lex.positions, 1), 1) AS tf"
                    " FROM unnest($1::text[]) WITH ORDINALITY AS t(body, ord),"
                    " unnest(to_tsvector('english', t.body)) AS lex",
                    part,
                )
                found: dict[int, dict[str, int]] = {}
                for row in rows:
                    found.setdefault(row["ord"], {})[row["lexeme"]] = row["tf"]
                for ordinal, text in enumerate(part, start=1):
                    known[sha(text)] = found.get(ordinal, {})
        finally:
            await conn.close()
        cache_file.write_text(json.dumps(known))
    return {t: Counter(known[sha(t)]) for t in texts}


async def query_lexemes(texts: list[str], cache_file: Path) -> dict[str, list[str]]:
    """The distinct lexemes of each query."""
    found = await lexemes_of(texts, cache_file)
    return {t: sorted(found[t]) for t in texts}


def without_ids(turns: list[Turn]) -> list[Turn]:
    """The turns as the service keeps them when they come without session ids: in time order,
    each joining the session of the turn before it unless more than the gap lies between."""
    out: list[Turn] = []
    session, last = "", None
    for turn in sorted(turns, key=lambda t: t.occurred_at):
        if last is None or turn.occurred_at - last > SESSION_GAP_SECONDS:
            session = f"inferred/{turn.turn_id}"
        out.append(replace(turn, session=session))
        last = turn.occurred_at
    return out


def as_keywords(questions: list[Question]) -> list[Question]:
    """The questions as an agent's short keyword queries, each a benchmark of its own
    ("lme-keywords", "locomo-keywords")."""
    return [
        replace(q, qid=f"{q.qid}~keywords", bench=f"{q.bench}-keywords", text=keyword_query(q.text))
        for q in questions
    ]


def load_all(
    data: Path, *, ids: bool = True, shapes: bool = False, keywords: bool = False
) -> tuple[list[Question], dict[str, list[Turn]]]:
    """Both benchmarks' questions and scopes (`ids=False`: the turns' sessions by the gap
    rule; `shapes`: also LoCoMo's observations as facts and summaries as notes; `keywords`:
    the questions asked as keyword queries instead)."""
    q1, s1 = load_lme(data / "longmemeval")
    q2, s2 = load_locomo(data / "locomo" / LOCOMO_FILE)
    scopes = {**s1, **s2}
    if not ids:
        scopes = {name: without_ids(turns) for name, turns in scopes.items()}
    if keywords:
        q1, q2 = as_keywords(q1), as_keywords(q2)
    if shapes:
        q3, s3 = load_locomo_shapes(data / "locomo" / LOCOMO_FILE)
        return q1 + q2 + q3, {**scopes, **s3}
    return q1 + q2, scopes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument(
        "--passages",
        default="locomo,lme-dev",
        help="where to embed window and context passages too: locomo, "
        "lme-dev (the first file), lme (both)",
    )
    parser.add_argument(
        "--without-ids",
        action="store_true",
        help="also the context passages of the turns stored without session "
        "ids (sessions by the gap rule)",
    )
    parser.add_argument(
        "--shapes",
        action="store_true",
        help="also LoCoMo's observations (as facts) and summaries (as notes)",
    )
    parser.add_argument(
        "--keywords", action="store_true", help="also the questions as keyword queries"
    )
    args = parser.parse_args()
    questions, scopes = load_all(args.data)
    if args.keywords:
        questions += as_keywords(questions)
    _, inferred = load_all(args.data, ids=False)
    cache = VectorCache(args.cache)
    every_text = [t.content for turns in scopes.values() for t in turns]
    asyncio.run(lexemes_of(every_text + [q.text for q in questions], args.cache / "lexemes.json"))
    print("lexemes cached", file=sys.stderr)
    embed_all(cache, [q.text for q in questions], label="questions")
    locomo = [s for s in scopes if s.startswith("locomo")]
    lme = [s for s in scopes if s.startswith("lme")]
    embed_all(cache, [t.content for s in locomo for t in scopes[s]], label="locomo turns")
    embed_all(cache, [t.content for s in lme for t in scopes[s]], label="lme turns")
    wanted = set(args.passages.split(","))
    first_file = {q.scope for q in questions if q.split == "longmemeval_s_dev"}
    for name, group in (("locomo", locomo), ("lme", lme)):
        if name not in wanted and not (name == "lme" and "lme-dev" in wanted):
            continue
        chosen = group if name in wanted else [s for s in group if s in first_file]
        texts = []
        for s in chosen:
            turns = scopes[s]
            texts += [w for t in turns for w in windows(t.content)]
            texts += [c for c in contexts(turns) if c]
            if args.without_ids:
                texts += [c for c in contexts(inferred[s]) if c]
        embed_all(cache, texts, label=f"{name} passages")
    if args.shapes:
        embed_shapes(cache, args.data, args.cache / "lexemes.json")


def embed_shapes(cache: VectorCache, data: Path, lexeme_file: Path) -> None:
    """The lexemes and vectors (own and windows) of LoCoMo's facts and notes."""
    _, shaped = load_locomo_shapes(data / "locomo" / LOCOMO_FILE)
    memories = [t for turns in shaped.values() for t in turns]
    asyncio.run(lexemes_of([t.keyword_text or t.content for t in memories], lexeme_file))
    embed_all(
        cache,
        [t.content for t in memories] + [w for t in memories for w in windows(t.content)],
        label="shapes",
    )


if __name__ == "__main__":
    main()
