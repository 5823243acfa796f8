"""Learned fusion: both legs' deep lists ordered by a linear model of each candidate's signals.

Each candidate of either list gets a few signals (its similarity and keyword score, each
against the best of the lists, its ranks, its session's best, its length, whether it lies in
the query's time window); the score is a weighted sum of the standardised signals, the weights
those of a logistic model trained to tell evidence turns from the rest on the LongMemEval and
LoCoMo development sets (bench/rank_study.py prints them). A memory without a session (a fact,
a rule) is its own session.
"""

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

# How deep each leg's list is read before the second stage orders the union.
DEPTH = 50
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
    """A linear model over standardised signals: sum of weight * (signal - mean) / scale."""

    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def contributions(self, rows: np.ndarray) -> np.ndarray:
        """Each signal's part of each row's score (same shape as `rows`)."""
        return ((rows - np.array(self.means)) / np.array(self.scales)) * np.array(self.weights)

    def scores(self, rows: np.ndarray) -> np.ndarray:
        """The model's score of each row: the probability that it is evidence."""
        logits = self.contributions(rows).sum(axis=1) + self.bias
        return 1 / (1 + np.exp(-logits))


def rank(candidates: Sequence[Candidate], model: "Model", *,
         depth: int = DEPTH) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's score and its per-signal contributions (logit parts)."""
    rows = signals(candidates, depth=depth)
    if len(rows) == 0:
        return np.zeros(0), rows
    return model.scores(rows), model.contributions(rows)


# Trained by `python bench/rank_study.py --emit` on both development sets.
MODEL = Model(
    means=(0.407541, -0.223347, 0.191993, 0.0108244, 0.0108115, 3.35687, 3.36051, -0.141544,
           0.419698, 4.70081, -0.132639, 0.0963871, -0.256221, 0.0328736, 0.0162483),
    scales=(0.13145, 0.126821, 0.24129, 0.00220743, 0.00220737, 0.828025, 0.827914, 0.114252,
            0.30496, 0.685881, 0.0936346, 0.121696, 0.140328, 0.0686913, 0.126429),
    weights=(0.14095, 0.18637, 0.064629, -0.0178064, -0.560238, -0.289393, -0.677696,
             0.343665, 0.775466, 0.816448, 0.415668, 0.241371, 0.182855, -0.0294657, 0.231843),
    bias=-2.16418,
)
