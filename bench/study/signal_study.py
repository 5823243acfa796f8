"""Would more signals, or another training of the trees, lift the learned second stage?

Adds one candidate signal at a time to the shipped signals (`app/retrieval/rerank.py`) and
scores the trees on the same held-out folds as `rank_study.py`; then other tree sizes and
benchmark weights. With `--tokens` (a cache this script fills with the model's per-token
states of every question and pool turn, about 15 minutes of one core) it also tries MaxSim,
the token-level similarity of the same MiniLM model. With `--lambdarank` it also trains the
trees to order each question's pool (LightGBM's LambdaRank and XE-NDCG objectives) instead
of telling evidence from the rest, alone, averaged over seeds and blended with the shipped
trees; LightGBM is needed for that part only (`pip install lightgbm`), Engram itself does not
use it. Bagged trees (each trained on resampled rows and a part of the signals) show what
averaging away the trees' variance gives.

    python -m bench.study.signal_study --cache /tmp/study-cache --passages \\
        [--more-cache DIR ...] [--depth 30] [--tokens /tmp/tokens.pkl] [--lambdarank]
"""

import json
import pickle
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from bench.study.fusion_study import Legs, load, order, recall_at, study_parser
from bench.study.rank_study import (
    features,
    held_out,
    held_out_scores,
    pool_of,
    question_weight,
    splits,
    trees,
)
from bench.study.study_data import sha

Extra = Callable[[Legs, np.ndarray], np.ndarray]
SPEAKER = re.compile(r"^\s*([^:\n]{1,40}):\s")


def adjacent(legs: Legs, pool: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The larger of `values` at the turns just before and after each pool member, in its
    session (0 where there is none)."""
    scope, n = legs.scope, len(legs.scope.turns)
    return np.array(
        [
            max(
                values[i - 1] if i > 0 and scope.session[i - 1] == scope.session[i] else 0.0,
                values[i + 1] if i + 1 < n and scope.session[i + 1] == scope.session[i] else 0.0,
            )
            for i in pool
        ]
    )


def coverage(lexemes: dict[str, dict[str, int]], weighted: bool) -> Extra:
    """Share of the question's lexemes (idf-weighted or not) each turn holds."""

    def extra(legs: Legs, pool: np.ndarray) -> np.ndarray:
        scope, n = legs.scope, len(legs.scope.turns)
        held, total = np.zeros(n), 0.0
        for term in lexemes[sha(legs.question.text)]:
            idx = scope.postings[term][0] if term in scope.postings else np.array([], int)
            weight = np.log(1 + (n - len(idx) + 0.5) / (len(idx) + 0.5)) if weighted else 1.0
            held[idx] += weight
            total += weight
        return held[pool] / max(total, 1e-9)

    return extra


def speaker_named(legs: Legs, pool: np.ndarray) -> np.ndarray:
    """1 when the turn's speaker ("Name: ...") is named in the question, -1 when another
    speaker is, 0 when none is."""
    question = legs.question.text.lower()
    speakers = [
        (m.group(1).strip().lower() if (m := SPEAKER.match(legs.scope.turns[i].content)) else "")
        for i in pool
    ]
    named = {s for s in speakers if s and re.search(rf"\b{re.escape(s)}\b", question)}
    return np.array([1.0 if s in named else -1.0 if named else 0.0 for s in speakers])


def feedback_similarity(legs: Legs, pool: np.ndarray) -> np.ndarray:
    """Similarity to the query moved towards each list's first three turns (Rocchio),
    against the pool's best."""
    top = np.concatenate([order(legs.sim)[:3], order(legs.bm25)[:3]])
    query = legs.qvec + 0.5 * legs.scope.own[top].mean(axis=0)
    similarity = legs.scope.own[pool] @ (query / np.linalg.norm(query))
    return similarity - similarity.max()


def session_gap(legs: Legs, pool: np.ndarray) -> np.ndarray:
    """How far below its session's best candidate each turn's similarity is."""
    similarity, session = legs.sim[pool], legs.scope.session[pool]
    best = {s: similarity[session == s].max() for s in np.unique(session)}
    return similarity - np.array([best[s] for s in session])


def maxsim(tokens: dict[str, np.ndarray]) -> Extra:
    """Mean over the question's tokens of their best cosine to the turn's tokens."""

    def extra(legs: Legs, pool: np.ndarray) -> np.ndarray:
        query = tokens[legs.question.text][1:-1].astype(np.float32)
        return np.array(
            [
                float(
                    (query @ tokens[legs.scope.turns[i].content][1:-1].astype(np.float32).T)
                    .max(axis=1)
                    .mean()
                )
                for i in pool
            ]
        )

    return extra


def token_states(all_legs: list[Legs], pools: list[np.ndarray], path: Path) -> dict:
    """Normalised per-token states of every question and pool turn, cached in `path`."""
    if path.exists():
        return pickle.loads(path.read_bytes())
    import torch
    from sentence_transformers import SentenceTransformer

    from app.core.config import PACKAGED_MODEL
    from app.embedding.model_files import model_path, set_offline_environment

    set_offline_environment()
    torch.set_num_threads(1)
    model = SentenceTransformer(model_path(PACKAGED_MODEL), device="cpu")
    texts = sorted(
        {legs.question.text for legs in all_legs}
        | {
            legs.scope.turns[i].content
            for legs, pool in zip(all_legs, pools, strict=True)
            for i in pool
        },
        key=len,
    )
    states = {}
    for start in range(0, len(texts), 64):
        part = texts[start : start + 64]
        for text, state in zip(
            part,
            model.encode(part, output_value="token_embeddings", convert_to_numpy=False),
            strict=True,
        ):
            vectors = state.numpy()
            states[text] = (
                vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9)
            ).astype(np.float16)
    path.write_bytes(pickle.dumps(states))
    return states


def main() -> None:
    parser = study_parser(__doc__)
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--tokens", type=Path, help="token-state cache (filled when missing)")
    parser.add_argument(
        "--lambdarank", action="store_true", help="also train ranking objectives (needs lightgbm)"
    )
    args = parser.parse_args()
    all_legs = load(args.cache, args.data, args.passages, args.more_cache)
    lexemes = json.loads((args.cache / "lexemes.json").read_text())
    pools = [pool_of(legs, args.depth) for legs in all_legs]
    shipped = [features(legs, pool, args.depth) for legs, pool in zip(all_legs, pools, strict=True)]
    extras: dict[str, Extra] = {
        "question lexemes held": coverage(lexemes, weighted=False),
        "question lexemes held, idf-weighted": coverage(lexemes, weighted=True),
        "question's lexeme count": lambda L, p: np.full(
            len(p), float(len(lexemes[sha(L.question.text)]))
        ),
        "best similarity of the pool": lambda L, p: np.full(len(p), float(L.sim[p].max())),
        "best BM25 of the pool": lambda L, p: np.full(len(p), float(L.bm25[p].max())),
        "similarity below its session's best": session_gap,
        "neighbour turns' similarity": lambda L, p: adjacent(L, p, L.sem_own) - L.sem_own[p],
        "neighbour turns' BM25": lambda L, p: adjacent(L, p, L.bm25) / max(L.bm25.max(), 1e-9),
        "turn is a question": lambda L, p: np.array(
            [float(L.scope.turns[i].content.rstrip().endswith("?")) for i in p]
        ),
        "speaker named in the question": speaker_named,
        "similarity after feedback": feedback_similarity,
    }
    if args.tokens:
        extras["MaxSim of token states"] = maxsim(token_states(all_legs, pools, args.tokens))
    for components in (2, 4, 8):
        extras[f"question's direction, {components} components"] = direction(all_legs, components)
    print(f"{len(all_legs)} questions, depth {args.depth}\n", file=sys.stderr)
    print("| signals, training | " + " | ".join(GROUPS) + " |")
    print("|---" * (len(GROUPS) + 1) + "|")
    report("shipped signals, 60 trees of depth 3", all_legs, pools, shipped)
    for name, extra in extras.items():
        rows = [
            np.column_stack([x, extra(legs, pool)])
            for x, legs, pool in zip(shipped, all_legs, pools, strict=True)
        ]
        report(f"+ {name}", all_legs, pools, rows)
    for label, kwargs in {
        "120 trees, learning rate 0.05": {"max_iter": 120, "learning_rate": 0.05},
        "100 trees of depth 2": {"max_iter": 100, "max_depth": 2},
        "60 trees, at least 50 rows a leaf": {"min_samples_leaf": 50},
        "60 trees, L2 1.0": {"l2_regularization": 1.0},
    }.items():
        report(label, all_legs, pools, shipped, **kwargs)
    for weight in (2.0, 4.0):
        report(f"LoCoMo weighs {weight:g}x", all_legs, pools, shipped, locomo_weight=weight)
    for count, share, resample in ((10, 1.0, True), (10, 0.7, False), (20, 0.5, True)):
        report_orders(
            f"{count} bagged trees, {share:g} of the signals each"
            + (", rows resampled" if resample else ""),
            all_legs,
            held_out(
                all_legs,
                pools,
                shipped,
                lambda x, y, w, c=count, f=share, r=resample: Bagged(c, f, r).fit(x, y, w),
            ),
        )
    ranked = held_out(all_legs, pools, shipped, lambda x, y, w: trees().fit(x, y, sample_weight=w))
    for step in (0.5, 1.0, 2.0, 3.0, 5.0):
        report_orders(
            f"sessions spread: {step:g} places back per turn of its session ranked before",
            all_legs,
            {i: spread_sessions(all_legs[i], ranking, step) for i, ranking in ranked.items()},
        )
    if args.lambdarank:
        for label, settings in RANKING_OBJECTIVES.items():
            report_ranker(label, all_legs, pools, shipped, settings)
        averaged = ranker_scores(all_legs, pools, shipped, SEEDS_AVERAGED, seeds=range(5))
        report_orders(
            "LambdaRank, 0.8 of the rows a tree, 5 seeds averaged",
            all_legs,
            {i: pools[i][order(values)] for i, values in averaged.items()},
        )
        tree_scores = held_out_scores(
            all_legs, pools, shipped, lambda x, y, w: trees().fit(x, y, sample_weight=w)
        )
        for share in (0.3, 0.5, 0.7):
            report_orders(
                f"shipped trees {share:g} + the 5 averaged {1 - share:g}, "
                "standardised per question",
                all_legs,
                {
                    i: pools[i][
                        order(
                            share * standard(tree_scores[i]) + (1 - share) * standard(averaged[i])
                        )
                    ]
                    for i in averaged
                },
            )


def direction(all_legs: list[Legs], components: int) -> Extra:
    """The question's vector along the first principal directions of all the questions'."""
    vectors = np.stack([legs.qvec for legs in all_legs])
    mean = vectors.mean(axis=0)
    axes = np.linalg.svd(vectors - mean, full_matrices=False)[2][:components]

    def extra(legs: Legs, pool: np.ndarray) -> np.ndarray:
        return np.repeat(((legs.qvec - mean) @ axes.T)[None, :], len(pool), axis=0)

    return extra


def spread_sessions(legs: Legs, ranking: np.ndarray, step: float) -> np.ndarray:
    """`ranking` with each turn moved `step` places back per turn of its session before it."""
    seen: dict[int, int] = defaultdict(int)
    keyed = []
    for position, turn in enumerate(ranking):
        session = legs.scope.session[turn]
        keyed.append((position + step * seen[session], position, turn))
        seen[session] += 1
    return np.array([turn for _, _, turn in sorted(keyed)])


def report_orders(name: str, all_legs: list[Legs], ranked: dict[int, np.ndarray]) -> None:
    """One table row for given orders of each question's pool."""
    found: dict[str, list[float]] = defaultdict(list)
    for i, legs in enumerate(all_legs):
        value = recall_at(legs, ranked[i], 10)
        found[legs.question.bench].append(value)
        found[f"{legs.question.bench}:{legs.question.qtype}"].append(value)
    print(
        f"| {name} | " + " | ".join(f"{np.mean(found[g]):.3f}" for g in GROUPS) + " |", flush=True
    )


RANKING_OBJECTIVES: dict[str, dict[str, float | str]] = {
    "LambdaRank, 60 trees of depth 3": {},
    "LambdaRank, cut at 10": {"lambdarank_truncation_level": 10},
    "LambdaRank, 120 trees, learning rate 0.05": {"n_estimators": 120, "learning_rate": 0.05},
    "LambdaRank, 200 trees, learning rate 0.05": {"n_estimators": 200, "learning_rate": 0.05},
    "LambdaRank, 60 trees of depth 4": {"num_leaves": 16, "max_depth": 4},
    "LambdaRank, 120 trees of depth 4, learning rate 0.05": {
        "num_leaves": 16,
        "max_depth": 4,
        "n_estimators": 120,
        "learning_rate": 0.05,
    },
    "LambdaRank, 100 trees, learning rate 0.07": {"n_estimators": 100, "learning_rate": 0.07},
    "LambdaRank, at least 50 rows a leaf": {"min_child_samples": 50},
    "LambdaRank, sigmoid 2": {"sigmoid": 2.0},
    "LambdaRank, sigmoid 0.5": {"sigmoid": 0.5},
    "LambdaRank, 0.8 of the rows a tree, seed 1": {
        "subsample": 0.8,
        "subsample_freq": 1,
        "random_state": 1,
    },
    "LambdaRank, 0.8 of the rows a tree, seed 2": {
        "subsample": 0.8,
        "subsample_freq": 1,
        "random_state": 2,
    },
    "XE-NDCG, 60 trees of depth 3": {"objective": "rank_xendcg"},
    "XE-NDCG, 200 trees, learning rate 0.05": {
        "objective": "rank_xendcg",
        "n_estimators": 200,
        "learning_rate": 0.05,
    },
}


SEEDS_AVERAGED: dict[str, float | str] = {"subsample": 0.8, "subsample_freq": 1}


def ranker_scores(
    all_legs: list[Legs],
    pools: list[np.ndarray],
    rows: list[np.ndarray],
    settings: dict[str, float | str],
    seeds: Iterable[int] = (0,),
) -> dict[int, np.ndarray]:
    """Held-out scores of LightGBM rankers, averaged over `seeds`."""
    import lightgbm

    labels = [legs.evidence[pool].astype(int) for legs, pool in zip(all_legs, pools, strict=True)]
    scores: dict[int, np.ndarray] = {}
    for train, test in splits(all_legs, 5):
        models = []
        for seed in seeds:
            model = lightgbm.LGBMRanker(
                **{
                    "objective": "lambdarank",
                    "n_estimators": 60,
                    "learning_rate": 0.1,
                    "num_leaves": 8,
                    "max_depth": 3,
                    "min_child_samples": 20,
                    "verbose": -1,
                    "random_state": seed,
                    **settings,
                }
            )
            model.fit(
                np.concatenate([rows[i] for i in train]),
                np.concatenate([labels[i] for i in train]),
                group=[len(labels[i]) for i in train],
                sample_weight=np.concatenate(
                    [np.full(len(labels[i]), 1000 * question_weight(all_legs, i)) for i in train]
                ),
            )
            models.append(model)
        for i in test:
            scores[i] = np.mean([model.predict(rows[i]) for model in models], axis=0)
    return scores


def report_ranker(
    name: str,
    all_legs: list[Legs],
    pools: list[np.ndarray],
    rows: list[np.ndarray],
    settings: dict[str, float | str],
) -> None:
    """One table row for trees trained to order each question's pool (LightGBM)."""
    scores = ranker_scores(all_legs, pools, rows, settings)
    report_orders(name, all_legs, {i: pools[i][order(values)] for i, values in scores.items()})


def standard(values: np.ndarray) -> np.ndarray:
    """`values` less their mean, over their standard deviation."""
    return (values - values.mean()) / (values.std() + 1e-9)


class Bagged:
    """`count` shipped-size trees, each on Poisson-resampled rows (if `resample`) and a
    `share` of the signals; their log-odds averaged."""

    def __init__(self, count: int, share: float, resample: bool) -> None:
        self.count, self.share, self.resample = count, share, resample
        self.models: list[Any] = []

    def fit(self, x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> "Bagged":
        """Train every tree."""
        rng = np.random.default_rng(7)
        for seed in range(self.count):
            times = rng.poisson(1.0, len(weights)) if self.resample else 1.0
            self.models.append(
                trees(max_features=self.share, random_state=seed).fit(
                    x, y, sample_weight=weights * times
                )
            )
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        """The trees' mean log-odds."""
        return np.mean([model.decision_function(x) for model in self.models], axis=0)


GROUPS = (
    "lme",
    "locomo",
    "locomo:multi-hop",
    "locomo:open-domain",
    "locomo:single-hop",
    "locomo:temporal",
)


def report(
    name: str,
    all_legs: list[Legs],
    pools: list[np.ndarray],
    rows: list[np.ndarray],
    locomo_weight: float = 1.0,
    **tree_args: float,
) -> None:
    """One table row: held-out R@10 per benchmark and LoCoMo category."""

    def weight(legs: list[Legs], index: int) -> float:
        scale = locomo_weight if legs[index].question.bench == "locomo" else 1.0
        return question_weight(legs, index) * scale

    ranked = held_out(
        all_legs,
        pools,
        rows,
        lambda x, y, w: trees(**tree_args).fit(x, y, sample_weight=w),
        weight=weight,
    )
    report_orders(name, all_legs, ranked)


if __name__ == "__main__":
    main()
