"""Second-stage ranking over the union of both legs' deep lists, learned on held-out folds.

    python -m bench.study.rank_study --cache /tmp/study-cache [--depth 50]

`--without-ids` also ranks every turn stored without a session id (sessions by the gap rule),
`--shapes` LoCoMo's observations stored as facts and summaries stored as notes, `--keywords`
the questions asked as an agent's keyword queries; each by trees trained on the other folds'
turns with ids (and, with `--train-shapes W`, on the other folds' facts and notes too, each
shape weighing W of a benchmark).
"""

import dataclasses
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from app.retrieval.rerank import MODEL_FILE, SIGNALS, Candidate, signals
from app.retrieval.timewindow import parse_time_window
from bench.study.fusion_study import Legs, load, order, recall_at, rrf, study_parser, table

FEATURES = list(SIGNALS)
TREES = 60


def pool_of(legs: Legs, depth: int) -> np.ndarray:
    """Indexes in either leg's top `depth` (keyword: only turns with a match)."""
    sem_top = order(legs.sim)[:depth]
    kw_top = order(legs.bm25)[:depth]
    kw_top = kw_top[legs.bm25[kw_top] > 0]
    return np.unique(np.concatenate([sem_top, kw_top]))


def candidates(legs: Legs, pool: np.ndarray, depth: int) -> list[Candidate]:
    """The pool as the service's second stage sees it."""
    sem_rank = np.empty(len(legs.sim), dtype=int)
    sem_rank[order(legs.sim)] = np.arange(1, len(legs.sim) + 1)
    kw_rank = np.empty(len(legs.bm25), dtype=int)
    kw_rank[order(legs.bm25)] = np.arange(1, len(legs.bm25) + 1)
    window = time_window(legs)
    out = []
    for i in pool:
        turn = legs.scope.turns[i]
        in_kw = kw_rank[i] <= depth and legs.bm25[i] > 0
        out.append(
            Candidate(
                similarity=float(legs.sim[i]),
                own_similarity=float(legs.sem_own[i]),
                keyword=float(legs.bm25[i]) if in_kw else 0.0,
                semantic_rank=int(sem_rank[i]) if sem_rank[i] <= depth else None,
                keyword_rank=int(kw_rank[i]) if in_kw else None,
                group=int(legs.scope.session[i]),
                length=len(turn.content),
                in_window=window is not None and window[0] <= turn.occurred_at < window[1],
            )
        )
    return out


_WINDOWS: dict[str, tuple[float, float] | None] = {}


def time_window(legs: Legs) -> tuple[float, float] | None:
    """The time window the question names, as the service reads it, in epoch seconds."""
    q = legs.question
    if q.qid not in _WINDOWS:
        found = parse_time_window(q.text, datetime.fromtimestamp(q.asked_at, UTC))
        _WINDOWS[q.qid] = (
            None if found is None else (found.start.timestamp(), found.end.timestamp())
        )
    return _WINDOWS[q.qid]


def features(legs: Legs, pool: np.ndarray, depth: int) -> np.ndarray:
    """One row of the service's signals per pool member."""
    return signals(candidates(legs, pool, depth), depth=depth)


def root(legs: Legs) -> str:
    """The conversation a question is asked of, whatever shape its memories were stored in."""
    return legs.question.scope.split("#")[0]


def scope_folds(all_legs: list[Legs], k: int) -> dict[str, int]:
    """A fold number per conversation."""
    scopes = sorted({root(legs) for legs in all_legs})
    rng = np.random.default_rng(7)
    return {s: int(f) for s, f in zip(scopes, rng.permutation(len(scopes)) % k, strict=True)}


def folds(all_legs: list[Legs], k: int) -> list[int]:
    """A fold number per question, whole conversations together (LoCoMo questions share
    one, in every shape)."""
    fold_of = scope_folds(all_legs, k)
    return [fold_of[root(legs)] for legs in all_legs]


def splits(all_legs: list[Legs], k: int) -> list[tuple[list[int], list[int]]]:
    """Per fold, the questions trained on (the other folds) and those ranked (this one)."""
    fold = folds(all_legs, k)
    everyone = range(len(all_legs))
    return [
        ([i for i in everyone if fold[i] != f], [i for i in everyone if fold[i] == f])
        for f in range(k)
    ]


def question_weight(all_legs: list[Legs], index: int) -> float:
    """Each benchmark weighs the same in training, and each of its questions the same
    (whatever their pool size and evidence count)."""
    bench = all_legs[index].question.bench
    return 1 / sum(1 for legs in all_legs if legs.question.bench == bench)


def trees(**settings: float) -> HistGradientBoostingClassifier:
    """The shipped model's kind and size (`settings` override its tree settings)."""
    chosen = {
        "max_iter": TREES,
        "max_depth": 3,
        "learning_rate": 0.1,
        "random_state": 0,
        **settings,
    }
    return HistGradientBoostingClassifier(**chosen, class_weight="balanced")


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray, c: float) -> Pipeline:
    """A logistic model on standardised signals, each question weighing the same."""
    model = make_pipeline(
        StandardScaler(), LogisticRegression(C=c, max_iter=4000, class_weight="balanced")
    )
    model.fit(x, y, logisticregression__sample_weight=weights)
    return model


Fit = Callable[[np.ndarray, np.ndarray, np.ndarray], Any]  # (rows, labels, weights) -> model
Weight = Callable[[list[Legs], int], float]


def held_out_scores(
    all_legs: list[Legs],
    pools: list[np.ndarray],
    rows: list[np.ndarray],
    fit: Fit,
    k: int = 5,
    weight: Weight = question_weight,
) -> dict[int, np.ndarray]:
    """Each question's pool (by index) scored by a model `fit` on the other folds, each
    question weighing `weight` in training."""
    ys = [legs.evidence[pool] for legs, pool in zip(all_legs, pools, strict=True)]
    out: dict[int, np.ndarray] = {}
    for train, scored in splits(all_legs, k):
        weights = np.concatenate(
            [np.full(len(ys[i]), weight(all_legs, i) / max(ys[i].sum(), 1)) for i in train]
        )
        model = fit(
            np.concatenate([rows[i] for i in train]),
            np.concatenate([ys[i] for i in train]),
            weights,
        )
        for i in scored:
            out[i] = model.decision_function(rows[i])
    return out


def held_out(
    all_legs: list[Legs],
    pools: list[np.ndarray],
    rows: list[np.ndarray],
    fit: Fit,
    k: int = 5,
    weight: Weight = question_weight,
) -> dict[int, np.ndarray]:
    """Each question's pool (by index) ordered by a model `fit` on the other folds."""
    scores = held_out_scores(all_legs, pools, rows, fit, k, weight)
    return {i: pools[i][order(values)] for i, values in scores.items()}


def learned(
    all_legs: list[Legs], depth: int, cols: list[int], k: int = 5, kind: str = "trees"
) -> dict[str, np.ndarray]:
    """Each question's ranking by a model (trees, or linear: logistic) trained on the other
    folds."""
    pools = [pool_of(legs, depth) for legs in all_legs]
    rows = [
        features(legs, pool, depth)[:, cols] for legs, pool in zip(all_legs, pools, strict=True)
    ]
    model_fit: Fit = (
        (lambda x, y, w: trees().fit(x, y, sample_weight=w))
        if kind == "trees"
        else (lambda x, y, w: fit(x, y, w, 1.0))
    )
    ranked = held_out(all_legs, pools, rows, model_fit, k)
    return {all_legs[i].question.qid: ranking for i, ranking in ranked.items()}


SHAPE_BENCHES = ("locomo-observations", "locomo-summaries")


def bench_weights(legs: list[Legs], shape_weight: float) -> Weight:
    """Each benchmark weighs the same in training (a shape `shape_weight` of one), each of its
    questions the same."""
    counts: dict[str, int] = {}
    for item in legs:
        counts[item.question.bench] = counts.get(item.question.bench, 0) + 1

    def weight(all_legs: list[Legs], index: int) -> float:
        bench = all_legs[index].question.bench
        return (shape_weight if bench in SHAPE_BENCHES else 1.0) / counts[bench]

    return weight


def learned_across(
    train: list[Legs], test: list[Legs], depth: int, cols: list[int], weight: Weight, k: int = 5
) -> dict[str, np.ndarray]:
    """Each `test` question's ranking by trees trained on the `train` questions of the other
    folds (folds by conversation, so no shape of a question is trained on while it is ranked)."""
    fold_of = scope_folds(train + test, k)

    def prepared(group: list[Legs]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        pools = [pool_of(legs, depth) for legs in group]
        return pools, [
            features(legs, pool, depth)[:, cols] for legs, pool in zip(group, pools, strict=True)
        ]

    train_pools, train_rows = prepared(train)
    test_pools, test_rows = prepared(test)
    ys = [legs.evidence[pool] for legs, pool in zip(train, train_pools, strict=True)]
    out: dict[str, np.ndarray] = {}
    for f in range(k):
        chosen = [i for i, legs in enumerate(train) if fold_of[root(legs)] != f]
        weights = np.concatenate(
            [np.full(len(ys[i]), weight(train, i) / max(ys[i].sum(), 1)) for i in chosen]
        )
        model = trees().fit(
            np.concatenate([train_rows[i] for i in chosen]),
            np.concatenate([ys[i] for i in chosen]),
            sample_weight=weights,
        )
        for j, legs in enumerate(test):
            if fold_of[root(legs)] == f:
                out[legs.question.qid] = test_pools[j][order(model.decision_function(test_rows[j]))]
    return out


def shares_sessions(legs: Legs, depth: int) -> bool:
    """Whether two of the question's candidates belong to one session (the service's
    fusion.shares_sessions)."""
    sessions = legs.scope.session[pool_of(legs, depth)]
    return len(set(sessions.tolist())) < len(sessions)


def without_ids_legs(args: Any) -> list[Legs]:
    """The turn questions again, their turns stored without session ids, as benchmarks of
    their own ("lme-noids", "locomo-noids")."""
    return [
        dataclasses.replace(
            legs,
            question=dataclasses.replace(
                legs.question,
                qid=f"{legs.question.qid}~noids",
                bench=f"{legs.question.bench}-noids",
            ),
        )
        for legs in load(args.cache, args.data, args.passages, args.more_cache, ids=False)
    ]


def keyword_legs(args: Any) -> list[Legs]:
    """The turn questions again, asked as keyword queries ("lme-keywords", "locomo-keywords")."""
    return load(args.cache, args.data, args.passages, args.more_cache, keywords=True)


def list_rows() -> dict[str, Callable[[Legs], float]]:
    """R@10 of each list alone and of RRF, the rows every table starts with."""
    return {
        "semantic": lambda L: recall_at(L, order(L.sem), 10),
        "keyword": lambda L: recall_at(L, order(L.bm25), 10),
        "RRF 10": lambda L: recall_at(L, rrf(L), 10),
    }


def across_shapes(args: Any) -> None:
    """Held-out recall of learned fusion on turns without ids, on facts and notes, and on
    keyword queries."""
    base = load(
        args.cache,
        args.data,
        args.passages,
        args.more_cache,
        shapes=args.shapes or bool(args.train_shapes),
    )
    turns = [legs for legs in base if legs.question.bench not in SHAPE_BENCHES]
    test = (
        (base if args.shapes else turns)
        + (without_ids_legs(args) if args.without_ids else [])
        + (keyword_legs(args) if args.keywords else [])
    )
    print(f"{len(turns)} turn questions; {len(test)} ranked", file=sys.stderr)
    rows = list_rows()
    everything = list(range(len(FEATURES)))
    ranked = learned_across(turns, test, args.depth, everything, bench_weights(turns, 0.0))
    rows["learned, trained on turns with ids"] = lambda L, r=ranked: recall_at(
        L, r[L.question.qid], 10
    )
    rows["learned as served (RRF where no two candidates share a session)"] = lambda L, r=ranked: (
        recall_at(L, r[L.question.qid] if shares_sessions(L, args.depth) else rrf(L), 10)
    )
    for shape_weight in args.train_shapes:
        ranked = learned_across(
            base, test, args.depth, everything, bench_weights(base, shape_weight)
        )
        rows[f"learned, + facts and notes at {shape_weight:g}"] = lambda L, r=ranked: recall_at(
            L, r[L.question.qid], 10
        )
    table(rows, test)


def main() -> None:
    parser = study_parser(__doc__)
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument(
        "--emit",
        action="store_true",
        help="write the model trained on every question to app/retrieval/ranker.json",
    )
    parser.add_argument(
        "--without-ids", action="store_true", help="also rank the turns stored without session ids"
    )
    parser.add_argument(
        "--shapes",
        action="store_true",
        help="also rank LoCoMo's observations as facts and summaries as notes",
    )
    parser.add_argument(
        "--keywords",
        action="store_true",
        help="also rank the turn questions asked as keyword queries",
    )
    parser.add_argument(
        "--train-shapes",
        type=float,
        nargs="*",
        default=[],
        help="also train on the facts and notes, each shape weighing this "
        "much of a benchmark (one model per weight)",
    )
    args = parser.parse_args()
    if args.without_ids or args.shapes or args.keywords:
        across_shapes(args)
        return
    all_legs = load(args.cache, args.data, args.passages, args.more_cache)
    print(f"{len(all_legs)} questions", file=sys.stderr)
    rows = list_rows()
    everything = list(range(len(FEATURES)))

    def without(*names: str) -> list[int]:
        return [i for i in everything if FEATURES[i] not in names]

    variants = {
        "trees, all signals": everything,
        "trees, no session": without("session_similarity_gap", "session_keyword"),
        "trees, no time window": without("in_window"),
        "trees, no length": without("log_length"),
    }
    ranked = learned(all_legs, args.depth, everything, kind="linear")
    rows["linear (logistic), all signals"] = lambda L, r=ranked: recall_at(L, r[L.question.qid], 10)
    for name, cols in variants.items():
        ranked = learned(all_legs, args.depth, cols)
        rows[name] = lambda L, r=ranked: recall_at(L, r[L.question.qid], 10)
    table(rows, all_legs)
    if args.emit:
        emit(all_legs, args.depth, MODEL_FILE)


def emit(all_legs: list[Legs], depth: int, path: Path) -> None:
    """Write the model trained on every question where app/retrieval/rerank.py reads it."""
    pools = [pool_of(legs, depth) for legs in all_legs]
    xs = [features(legs, pool, depth) for legs, pool in zip(all_legs, pools, strict=True)]
    ys = [legs.evidence[pool] for legs, pool in zip(all_legs, pools, strict=True)]
    weights = np.concatenate(
        [np.full(len(y), question_weight(all_legs, i) / max(y.sum(), 1)) for i, y in enumerate(ys)]
    )
    model = trees()
    model.fit(np.concatenate(xs), np.concatenate(ys), sample_weight=weights)
    exported = [export_tree(predictor.nodes) for [predictor] in model._predictors]
    path.write_text(
        json.dumps(
            {
                "signals": list(SIGNALS),
                "bias": float(model._baseline_prediction.ravel()[0]),
                "trained_on": f"{len(all_legs)} questions, depth {depth}",
                "trees": exported,
            }
        )
        + "\n"
    )
    print(f"wrote {path}: {len(exported)} trees", file=sys.stderr)


def export_tree(nodes: np.ndarray) -> dict[str, list[float]]:
    """One fitted tree as arrays; an inner node's value is the count-weighted mean of its
    children's, so the value changes along a path attribute the score to signals."""
    value = [float(v) for v in nodes["value"]]
    count = [float(c) for c in nodes["count"]]

    def settle(node: int) -> None:
        if nodes["is_leaf"][node]:
            return
        left, right = int(nodes["left"][node]), int(nodes["right"][node])
        settle(left)
        settle(right)
        total = count[left] + count[right]
        count[node] = total
        value[node] = (value[left] * count[left] + value[right] * count[right]) / max(total, 1)

    settle(0)
    return {
        "feature": [int(f) for f in nodes["feature_idx"]],
        "threshold": [round(float(t), 6) for t in nodes["num_threshold"]],
        "left": [int(n) for n in nodes["left"]],
        "right": [int(n) for n in nodes["right"]],
        "value": [round(v, 6) for v in value],
        "leaf": [bool(b) for b in nodes["is_leaf"]],
    }


if __name__ == "__main__":
    main()
