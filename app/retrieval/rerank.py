"""Learned fusion: both legs' deep lists ordered by a model of each candidate's signals.

Each candidate of either list gets a few signals (its similarity and keyword score, each
against the best of the lists, its ranks, its session's best, its length, whether it lies in
the query's time window); a small ensemble of boosted trees (`ranker.json`), trained to tell
the turns that answer a question from the rest on the LongMemEval and LoCoMo development sets
(`bench/study/rank_study.py --emit` writes it), turns them into a probability. A memory without a
session (a fact, a rule) is its own session; a search whose candidates share no session is
fused by RRF instead (retrieval/search.py).
"""

import functools
import json
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# How deep each leg's list is read before the second stage orders the union.
DEPTH = 30
RRF_K = 60


@dataclass(frozen=True)
class Candidate:
    """What the second stage knows of one candidate."""

    similarity: float  # to the query: the best of the memory's own vector and its passages'
    own_similarity: float  # of its own vector alone
    keyword: float  # the keyword leg's score; 0 outside that list
    semantic_rank: int | None  # in the semantic list (None: not in it)
    keyword_rank: int | None
    group: Hashable  # its session; candidates of one session share it
    length: int  # characters of its text
    in_window: bool = False  # inside the time window the query names


SIGNALS = (
    "similarity",
    "similarity_gap",
    "keyword",
    "semantic_rrf",
    "keyword_rrf",
    "semantic_log_rank",
    "keyword_log_rank",
    "session_similarity_gap",
    "session_keyword",
    "log_length",
    "similarity_x_spread",
    "keyword_x_spread",
    "own_gap",
    "passage_lift",
    "in_window",
)


def signals(candidates: Sequence[Candidate], *, depth: int) -> np.ndarray:
    """One row of SIGNALS per candidate (shape: len(candidates) x len(SIGNALS))."""
    n = len(candidates)
    if n == 0:
        return np.zeros((0, len(SIGNALS)))
    sim = np.array([c.similarity for c in candidates])
    own = np.array([c.own_similarity for c in candidates])
    kw = np.array([c.keyword for c in candidates])
    missing = depth + 1
    sem_rank = np.array([c.semantic_rank or missing for c in candidates], dtype=float)
    kw_rank = np.array([c.keyword_rank or missing for c in candidates], dtype=float)
    best_sim = sim.max()
    kw_scores = np.sort(kw[kw > 0])[::-1]
    best_kw = kw_scores[0] if len(kw_scores) else 1.0
    # How much the keyword list's first result stands out from its tenth: high when the
    # query has a rare, telling word.
    spread = (
        (kw_scores[0] - kw_scores[min(9, len(kw_scores) - 1)]) / kw_scores[0]
        if len(kw_scores)
        else 0.0
    )
    kw_norm = kw / best_kw
    numbers: dict[Hashable, int] = {}
    group = np.array([numbers.setdefault(c.group, len(numbers)) for c in candidates])
    session_sim = _group_max(sim, group, len(numbers))
    session_kw = _group_max(kw_norm, group, len(numbers))
    length = np.array([math.log1p(c.length) for c in candidates])
    window = np.array([1.0 if c.in_window else 0.0 for c in candidates])
    return np.stack(
        [
            sim,
            sim - best_sim,
            kw_norm,
            1 / (RRF_K + sem_rank),
            1 / (RRF_K + kw_rank),
            np.log(sem_rank),
            np.log(kw_rank),
            session_sim - best_sim,
            session_kw,
            length,
            (sim - best_sim) * spread,
            kw_norm * spread,
            own - best_sim,
            sim - own,
            window,
        ],
        axis=1,
    )


def _group_max(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Each value's group's largest value (`group` numbers each value's group from 0)."""
    best = np.full(groups, -np.inf)
    np.maximum.at(best, group, values)
    result: np.ndarray = best[group]
    return result


@dataclass(frozen=True)
class Model:
    """Boosted regression trees over the signals: the logit is `bias` plus one leaf value per
    tree. Arrays are (trees, nodes); a row goes left where its signal is <= the threshold.
    An inner node's value is the count-weighted mean of its leaves', so each split's change
    of value is that signal's part of the score (Saabas' attribution)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    leaf: np.ndarray
    bias: float

    @classmethod
    def load(cls, path: Path) -> "Model":
        """The model written by bench/study/rank_study.py --emit."""
        data = json.loads(path.read_text())
        if data["signals"] != list(SIGNALS):
            raise ValueError(f"{path} was trained on other signals: {data['signals']}")
        trees = data["trees"]
        width = max(len(tree["value"]) for tree in trees)

        def table(name: str, dtype: type, fill: float) -> np.ndarray:
            out: np.ndarray = np.full((len(trees), width), fill, dtype=dtype)
            for index, tree in enumerate(trees):
                out[index, : len(tree[name])] = tree[name]
            return out

        return cls(
            table("feature", np.int64, 0),
            table("threshold", np.float64, 0.0),
            table("left", np.int64, 0),
            table("right", np.int64, 0),
            table("value", np.float64, 0.0),
            table("leaf", np.bool_, True),
            float(data["bias"]),
        )

    @functools.cached_property
    def _flat(self) -> tuple[np.ndarray, ...]:
        """feature, threshold, left, right (as flat indices), value and leaf, one row of all
        the trees' nodes, indexed by tree * nodes-per-tree + node."""
        width = self.value.shape[1]
        offset = (np.arange(self.value.shape[0]) * width)[:, None]
        return (
            self.feature.ravel(),
            self.threshold.ravel(),
            (self.left + offset).ravel(),
            (self.right + offset).ravel(),
            self.value.ravel(),
            self.leaf.ravel(),
        )

    def paths(self, rows: np.ndarray) -> list[np.ndarray]:
        """The node each row is at in each tree, level by level from the roots (one array of
        rows x trees per level, each node as its flat index: tree * nodes-per-tree + node)."""
        feature, threshold, left, right, _, leaf = self._flat
        node = np.broadcast_to(
            np.arange(self.value.shape[0]) * self.value.shape[1], (len(rows), self.value.shape[0])
        )
        cell = (np.arange(len(rows)) * rows.shape[1])[:, None]
        values = rows.ravel()
        levels = [node]
        at_leaf = leaf[node]
        while not at_leaf.all():
            goes_left = values[cell + feature[node]] <= threshold[node]
            node = np.where(at_leaf, node, np.where(goes_left, left[node], right[node]))
            at_leaf = leaf[node]
            levels.append(node)
        return levels

    def contributions(
        self, rows: np.ndarray, levels: Sequence[np.ndarray] | None = None
    ) -> np.ndarray:
        """Each signal's part of each row's logit (same shape as `rows`); with the roots'
        values and the bias they add up to the logit. `levels`: the rows' `paths`, if known."""
        feature, _, _, _, value, _ = self._flat
        parts = np.zeros(rows.shape)
        levels = self.paths(rows) if levels is None else levels
        signal = np.arange(rows.shape[1])[None, :, None]
        for parent, child in zip(levels, levels[1:], strict=False):
            change = np.where(parent != child, value[child] - value[parent], 0.0)
            # rows x signals x trees: each tree's change under the signal its split read.
            read = feature[parent][:, None, :] == signal
            parts += (change[:, None, :] * read).sum(axis=2)
        return parts

    @property
    def base(self) -> float:
        """The logit of a row that no split moves: the bias and every root's value."""
        return self.bias + float(self.value[:, 0].sum())

    def scores(self, rows: np.ndarray, levels: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """The probability that each row is evidence; `levels`: the rows' `paths`, if known."""
        value = self._flat[4]
        leaves = (self.paths(rows) if levels is None else levels)[-1]
        logits = value[leaves].sum(axis=1) + self.bias
        result: np.ndarray = 1 / (1 + np.exp(-logits))
        return result


@dataclass(frozen=True)
class Ranked:
    """Candidates as the model saw them: their signals (one row each), the node each row is
    at in each tree level by level, and each one's score."""

    rows: np.ndarray
    levels: list[np.ndarray]
    scores: np.ndarray

    def contributions(self, model: Model, indices: Sequence[int]) -> np.ndarray:
        """The per-signal contributions of the candidates at `indices` (one row each), as
        `Model.contributions` of every row gives them, without the others' work."""
        chosen = np.asarray(indices, dtype=np.int64)
        if not self.levels:
            return np.zeros((len(chosen), len(SIGNALS)))
        return model.contributions(self.rows[chosen], [level[chosen] for level in self.levels])


def rank(candidates: Sequence[Candidate], model: Model, *, depth: int = DEPTH) -> Ranked:
    """Each candidate's signals and score, each tree walked once; contributions are asked of
    the result for the candidates shown."""
    rows = signals(candidates, depth=depth)
    if len(rows) == 0:
        return Ranked(rows, [], np.zeros(0))
    levels = model.paths(rows)
    return Ranked(rows, levels, model.scores(rows, levels))


MODEL_FILE = Path(__file__).with_name("ranker.json")


@functools.cache
def shipped_model() -> Model:
    """The model shipped with Engram (`ranker.json`), read once."""
    return Model.load(MODEL_FILE)
