"""How much evidence each leg finds, and what fusion and a second stage can make of it.

Reads the cache `study_data.py` fills (vectors and lexemes of every turn and question of both
dev sets) and computes, per question, both legs over its whole scope exactly: cosine
similarity to the turn's vectors (own, or best of own and passages) and BM25 with the scope's
statistics, as the service does. Then prints turn-level recall per benchmark and question type:

- each leg's R@10, R@50, R@100 and their union's (how much evidence a second stage could find);
- RRF over 10-long lists (the service's default), the per-question better-leg oracle;
- the ranking functions under study, scored on held-out folds when they are learned.

    python -m bench.study.fusion_study --cache /tmp/study-cache [--passages]
"""

import argparse
import asyncio
import math
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from app.core.text import CONTEXT_MAX_CHARS
from app.repositories.search.candidates import WINDOW_DISTANCE_PENALTY
from bench.study.study_data import (
    CacheSet,
    Question,
    Turn,
    VectorCache,
    contexts,
    lexemes_of,
    load_all,
    sha,
    windows,
)

K1, B = 1.2, 0.75


@dataclass
class Scope:
    """A scope's turns as arrays."""

    turns: list[Turn]
    own: np.ndarray  # (n, 384)
    best_passage: list[np.ndarray | None]  # each turn's window and context vectors, or None
    n_windows: list[int]  # how many of each turn's passage vectors are windows (the first)
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # lexeme -> (turn indexes, tf)
    doc_len: np.ndarray
    session: np.ndarray  # session number per turn
    occurred: np.ndarray
    length: np.ndarray


@dataclass
class Legs:
    """One question's leg scores over every turn of its scope."""

    question: Question
    scope: Scope
    qvec: np.ndarray
    sem_own: np.ndarray
    sem: np.ndarray  # the semantic list read on its own (repositories/search/candidates.AS_PARTS)
    bm25: np.ndarray
    evidence: np.ndarray  # bool
    sim: np.ndarray  # best of own and every passage: a hit's similarity, learned's pool order
    covers: list[frozenset[str]] | None = None  # facts and notes: the turns each one cites


def build_scope(
    turns: list[Turn], cache: VectorCache, lexemes: dict[str, dict[str, int]], with_passages: bool
) -> Scope:
    """Arrays of one scope."""
    own = cache.get([t.content for t in turns])
    best: list[np.ndarray | None] = []
    n_windows: list[int] = []
    if with_passages:
        ctx = contexts(turns)
        for turn, context in zip(turns, ctx, strict=True):
            spans = [t for t in windows(turn.content) if sha(t) in cache.index]
            texts = spans + [t for t in [context] if t and sha(t) in cache.index]
            best.append(cache.get(texts) if texts else None)
            n_windows.append(len(spans))
    else:
        best = [None] * len(turns)
        n_windows = [0] * len(turns)
    postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    doc_len = np.zeros(len(turns))
    for i, turn in enumerate(turns):
        counts = lexemes[turn.keyword_text or turn.content]
        doc_len[i] = sum(counts.values())
        for term, tf in counts.items():
            postings[term][0].append(i)
            postings[term][1].append(tf)
    sessions: dict[str, int] = {}
    return Scope(
        turns,
        own,
        best,
        n_windows,
        {t: (np.array(a), np.array(b, dtype=float)) for t, (a, b) in postings.items()},
        doc_len,
        np.array([sessions.setdefault(t.session, len(sessions)) for t in turns]),
        np.array([t.occurred_at for t in turns]),
        np.array([len(t.content) for t in turns], dtype=float),
    )


def bm25(scope: Scope, terms: list[str]) -> np.ndarray:
    """BM25 of every turn for the query's distinct lexemes, the scope's statistics."""
    n = len(scope.turns)
    avgdl = scope.doc_len.sum() / max(n, 1)
    scores = np.zeros(n)
    for term in terms:
        if term not in scope.postings:
            continue
        idx, tf = scope.postings[term]
        idf = math.log(1 + (n - len(idx) + 0.5) / (len(idx) + 0.5))
        scores[idx] += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * scope.doc_len[idx] / avgdl))
    return scores


def legs_of(question: Question, scope: Scope, qvec: np.ndarray, terms: list[str]) -> Legs:
    """Both legs of one question."""
    sem_own = scope.own @ qvec
    sem, sim = sem_own.copy(), sem_own.copy()
    for i, vectors in enumerate(scope.best_passage):
        if vectors is None:
            continue
        scores, n = vectors @ qvec, scope.n_windows[i]
        sim[i] = max(sim[i], float(scores.max()))
        if n:
            sem[i] = max(sem[i], float(scores[:n].max()) - WINDOW_DISTANCE_PENALTY)
        if len(scores) > n and scope.length[i] <= CONTEXT_MAX_CHARS:
            sem[i] = max(sem[i], float(scores[n:].max()))
    covers = [t.cites for t in scope.turns] if any(t.cites for t in scope.turns) else None
    evidence = np.array(
        [bool(c & question.evidence) for c in covers]
        if covers is not None
        else [t.turn_id in question.evidence for t in scope.turns]
    )
    return Legs(question, scope, qvec, sem_own, sem, bm25(scope, terms), evidence, sim, covers)


def load(
    cache_dir: Path,
    data: Path,
    with_passages: bool,
    more: list[Path] | None = None,
    *,
    ids: bool = True,
    shapes: bool = False,
    keywords: bool = False,
) -> list[Legs]:
    """Every question with evidence, its legs computed (vectors from `cache_dir`, then the
    `more` cache folders); `ids`, `shapes` and `keywords` as `study_data.load_all` reads
    them."""
    questions, scopes = load_all(data, ids=ids, shapes=shapes, keywords=keywords)
    cache = CacheSet([cache_dir, *(more or [])])
    texts = [t.keyword_text or t.content for turns in scopes.values() for t in turns] + [
        q.text for q in questions
    ]
    lexemes = asyncio.run(lexemes_of(texts, cache_dir / "lexemes.json"))
    built = {}
    out = []
    for q in questions:
        turns = scopes[q.scope]
        if any(sha(t.content) not in cache.index for t in turns) or sha(q.text) not in cache.index:
            continue
        if q.scope not in built:
            built[q.scope] = build_scope(turns, cache, lexemes, with_passages)
        out.append(legs_of(q, built[q.scope], cache.get([q.text])[0], sorted(lexemes[q.text])))
    return out


def order(scores: np.ndarray) -> np.ndarray:
    """Indexes best first (ties by position)."""
    return np.lexsort((np.arange(len(scores)), -scores))


def recall_at(legs: Legs, ranking: np.ndarray, k: int) -> float:
    """Share of the evidence turns in the first k of `ranking` (facts and notes: share of the
    evidence turns cited by one of them)."""
    if legs.covers is not None:
        cited = frozenset().union(*(legs.covers[i] for i in ranking[:k]))
        return len(cited & legs.question.evidence) / len(legs.question.evidence)
    return float(legs.evidence[ranking[:k]].sum() / legs.evidence.sum())


def rrf(legs: Legs, depth: int = 10, k: int = 60, sem: np.ndarray | None = None) -> np.ndarray:
    """The service's RRF over two `depth`-long lists, missing rank = depth + 1."""
    s = legs.sem if sem is None else sem
    n = len(s)
    ranks = []
    for scores in (s, legs.bm25):
        rank = np.full(n, depth + 1.0)
        top = order(scores)[:depth]
        if scores is legs.bm25:
            top = top[scores[top] > 0]
        rank[top] = np.arange(1, len(top) + 1)
        ranks.append(rank)
    fused = 1 / (k + ranks[0]) + 1 / (k + ranks[1])
    inside = (ranks[0] <= depth) | (ranks[1] <= depth)
    fused[~inside] = -1
    return order(fused)


Report = dict[str, dict[str, list[float]]]


def table(rows: dict[str, Callable[[Legs], float]], all_legs: list[Legs]) -> None:
    """Mean of each row's per-question value, per benchmark and question type."""
    groups: dict[tuple[str, str], list[Legs]] = defaultdict(list)
    for legs in all_legs:
        groups[(legs.question.bench, "all")].append(legs)
        groups[(legs.question.bench, legs.question.qtype)].append(legs)
    keys = sorted(groups, key=lambda g: (g[0] != "lme", g[1] != "all", g[1]))
    print("| | " + " | ".join(f"{b} {t} ({len(groups[(b, t)])})" for b, t in keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for name, fn in rows.items():
        values = {legs.question.qid: fn(legs) for legs in all_legs}
        cells = [np.mean([values[legs.question.qid] for legs in groups[key]]) for key in keys]
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    sys.stdout.flush()


def headroom(all_legs: list[Legs]) -> None:
    """Each leg's recall at 10, 50 and 100, the union's, RRF and the better-leg oracle."""

    def union(legs: Legs, depth: int) -> float:
        top = set(order(legs.sim)[:depth]) | set(order(legs.bm25)[:depth])
        return float(legs.evidence[list(top)].sum() / legs.evidence.sum())

    rows: dict[str, Callable[[Legs], float]] = {}
    for depth in (10, 50, 100):
        rows[f"semantic R@{depth}"] = lambda L, d=depth: recall_at(L, order(L.sem), d)
        rows[f"semantic own only R@{depth}"] = lambda L, d=depth: recall_at(L, order(L.sem_own), d)
        rows[f"keyword R@{depth}"] = lambda L, d=depth: recall_at(L, order(L.bm25), d)
        rows[f"union of both top-{depth}"] = lambda L, d=depth: union(L, d)
    rows["RRF of the two 10-lists R@10"] = lambda L: recall_at(L, rrf(L), 10)
    rows["better leg per question R@10"] = lambda L: max(
        recall_at(L, order(L.sem), 10), recall_at(L, order(L.bm25), 10)
    )
    table(rows, all_legs)


def study_parser(doc: str | None) -> argparse.ArgumentParser:
    """The arguments every study script reads: the data, the vector caches, passages."""
    parser = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--more-cache", type=Path, action="append", default=[])
    parser.add_argument(
        "--passages",
        action="store_true",
        help="the semantic leg also reads window and context passages",
    )
    return parser


def main() -> None:
    parser = study_parser(__doc__)
    args = parser.parse_args()
    all_legs = load(args.cache, args.data, args.passages, args.more_cache)
    print(f"{len(all_legs)} questions, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n")
    headroom(all_legs)


if __name__ == "__main__":
    main()
