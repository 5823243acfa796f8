"""Learned fusion: both legs' deep lists ordered by a model of each candidate's signals.

Each candidate of either list gets a few signals (its similarity and keyword score, each
against the best of the lists, its ranks, its session's best, its length, whether it lies in
the query's time window); a small ensemble of boosted trees (`ranker.json`), trained to tell
the turns that answer a question from the rest on the LongMemEval and LoCoMo development sets
(`bench/rank_study.py --emit` writes it), turns them into a probability. A memory without a
session (a fact, a rule) is its own session.
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


SIGNALS = ("similarity", "similarity_gap", "keyword", "semantic_rrf", "keyword_rrf",
           "semantic_log_rank", "keyword_log_rank", "session_similarity_gap",
           "session_keyword", "log_length", "similarity_x_spread", "keyword_x_spread",
           "own_gap", "passage_lift", "in_window")


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
    spread = ((kw_scores[0] - kw_scores[min(9, len(kw_scores) - 1)]) / kw_scores[0]
              if len(kw_scores) else 0.0)
    kw_norm = kw / best_kw
    session_sim = np.empty(n)
    session_kw = np.empty(n)
    groups: dict[Hashable, list[int]] = {}
    for index, candidate in enumerate(candidates):
        groups.setdefault(candidate.group, []).append(index)
    for members in groups.values():
        session_sim[members] = sim[members].max()
        session_kw[members] = kw_norm[members].max()
    length = np.array([math.log1p(c.length) for c in candidates])
    window = np.array([1.0 if c.in_window else 0.0 for c in candidates])
    return np.stack([
        sim, sim - best_sim, kw_norm, 1 / (RRF_K + sem_rank), 1 / (RRF_K + kw_rank),
        np.log(sem_rank), np.log(kw_rank), session_sim - best_sim, session_kw, length,
        (sim - best_sim) * spread, kw_norm * spread, own - best_sim, sim - own, window,
    ], axis=1)


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
        """The model written by bench/rank_study.py --emit."""
        data = json.loads(path.read_text())
        if data["signals"] != list(SIGNALS):
            raise ValueError(f"{path} was trained on other signals: {data['signals']}")
        trees = data["trees"]
        width = max(len(tree["value"]) for tree in trees)

        def table(name: str, dtype: type, fill: float) -> np.ndarray:
            out: np.ndarray = np.full((len(trees), width), fill, dtype=dtype)
            for index, tree in enumerate(trees):
                out[index, :len(tree[name])] = tree[name]
            return out

        return cls(table("feature", np.int64, 0), table("threshold", np.float64, 0.0),
                   table("left", np.int64, 0), table("right", np.int64, 0),
                   table("value", np.float64, 0.0), table("leaf", np.bool_, True),
                   float(data["bias"]))

    def _paths(self, rows: np.ndarray) -> list[np.ndarray]:
        """The node each row is at in each tree, level by level from the roots."""
        trees = np.arange(self.value.shape[0])[None, :]
        node = np.zeros((len(rows), self.value.shape[0]), dtype=np.int64)
        levels = [node]
        while not self.leaf[trees, node].all():
            feature = self.feature[trees, node]
            goes_left = rows[np.arange(len(rows))[:, None], feature] <= self.threshold[trees, node]
            step = np.where(goes_left, self.left[trees, node], self.right[trees, node])
            node = np.where(self.leaf[trees, node], node, step)
            levels.append(node)
        return levels

    def contributions(self, rows: np.ndarray) -> np.ndarray:
        """Each signal's part of each row's logit (same shape as `rows`); with the roots'
        values and the bias they add up to the logit."""
        trees = np.arange(self.value.shape[0])[None, :]
        parts = np.zeros(rows.shape)
        levels = self._paths(rows)
        for parent, child in zip(levels, levels[1:], strict=False):
            moved = parent != child
            change = np.where(moved, self.value[trees, child] - self.value[trees, parent], 0.0)
            feature = self.feature[trees, parent]
            for column in range(rows.shape[1]):
                parts[:, column] += (change * (feature == column)).sum(axis=1)
        return parts

    @property
    def base(self) -> float:
        """The logit of a row that no split moves: the bias and every root's value."""
        return self.bias + float(self.value[:, 0].sum())

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """The probability that each row is evidence."""
        trees = np.arange(self.value.shape[0])[None, :]
        leaves = self._paths(rows)[-1]
        logits = self.value[trees, leaves].sum(axis=1) + self.bias
        return 1 / (1 + np.exp(-logits))


def rank(candidates: Sequence[Candidate], model: "Model", *,
         depth: int = DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's score and its per-signal contributions (logit parts)."""
    rows = signals(candidates, depth=depth)
    if len(rows) == 0:
        return np.zeros(0), rows
    return model.scores(rows), model.contributions(rows)


MODEL_FILE = Path(__file__).with_name("ranker.json")


@functools.cache
def shipped_model() -> Model:
    """The model shipped with Engram (`ranker.json`), read once."""
    return Model.load(MODEL_FILE)
