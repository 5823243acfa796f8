"""Learned fusion: each signal is read from the right place and moves the order it should."""

import math
import uuid
from datetime import UTC, datetime

import numpy as np
import pytest

from app.repositories.search.candidates import RankedCandidate
from app.retrieval import rerank
from app.retrieval.fusion import Fused, Known, _with_lists, fuse_learned
from app.retrieval.rerank import SIGNALS, Candidate, Model, signals

A, B, C = (uuid.UUID(int=i) for i in range(1, 4))
MAY = datetime(2023, 5, 1, tzinfo=UTC)
JUNE = datetime(2023, 6, 1, tzinfo=UTC)


def only(signal: str, threshold: float) -> Model:
    """One tree that scores a candidate 1 when `signal` is above `threshold`, else 0."""
    return Model(
        feature=np.array([[SIGNALS.index(signal), 0, 0]]),
        threshold=np.array([[threshold, 0.0, 0.0]]),
        left=np.array([[1, 0, 0]]),
        right=np.array([[2, 0, 0]]),
        value=np.array([[0.5, 0.0, 1.0]]),
        leaf=np.array([[False, True, True]]),
        bias=0.0,
    )


def ranked(*ids: uuid.UUID, scores: tuple[float, ...] = ()) -> list[RankedCandidate]:
    return [
        RankedCandidate("episode", memory_id, rank, scores[rank - 1] if scores else 0.0)
        for rank, memory_id in enumerate(ids, 1)
    ]


def known(
    similarity: float = 0.5,
    *,
    own: float | None = None,
    group: object = None,
    length: int = 100,
    occurred_at: datetime | None = None,
) -> Known:
    return Known(
        similarity, similarity if own is None else own, group or object(), length, occurred_at
    )


def order(fused) -> list[uuid.UUID]:
    return [f.memory_id for f in fused]


def test_signals_against_the_best_of_the_lists():
    rows = signals(
        [
            Candidate(0.8, 0.6, 4.0, 1, 2, "s1", 99),
            Candidate(0.5, 0.5, 8.0, 2, 1, "s1", 9),
            Candidate(0.3, 0.3, 0.0, 3, None, "s2", 0, in_window=True),
        ],
        depth=50,
    )
    value = {name: rows[:, i] for i, name in enumerate(SIGNALS)}
    assert value["similarity_gap"] == pytest.approx([0.0, -0.3, -0.5])
    assert value["keyword"] == pytest.approx([0.5, 1.0, 0.0])
    assert value["keyword_rrf"] == pytest.approx([1 / 62, 1 / 61, 1 / 111])
    assert value["session_similarity_gap"] == pytest.approx([0.0, 0.0, -0.5])
    assert value["session_keyword"] == pytest.approx([1.0, 1.0, 0.0])
    assert value["passage_lift"] == pytest.approx([0.2, 0.0, 0.0])
    assert value["log_length"] == pytest.approx([math.log(100), math.log(10), 0.0])
    assert value["in_window"] == pytest.approx([0.0, 0.0, 1.0])
    # The keyword list's first result against its last (fewer than ten here): (8 - 4) / 8.
    assert value["keyword_x_spread"] == pytest.approx([0.25, 0.5, 0.0])


def test_each_signal_reaches_the_order():
    lists = ranked(A, B, C, scores=(0.9, 0.5, 0.1)), ranked(C, B, scores=(7.0, 3.0))
    rows = {
        ("episode", A): known(0.9),
        ("episode", B): known(0.5, length=5000),
        ("episode", C): known(0.1, occurred_at=MAY),
    }
    first = {
        signal: order(
            fuse_learned(
                *lists,
                known=rows,
                limit=3,
                depth=50,
                window=(MAY, JUNE),
                model=only(signal, threshold),
            )
        )[0]
        for signal, threshold in (
            ("similarity", 0.7),
            ("keyword", 0.9),
            ("log_length", 6.0),
            ("in_window", 0.5),
        )
    }
    assert first == {"similarity": A, "keyword": C, "log_length": B, "in_window": C}


def test_a_session_lifts_its_turns():
    s1, s2 = ("butler", "s1"), ("butler", "s2")
    rows = {
        ("episode", A): known(0.5, group=s2),
        ("episode", B): known(0.5, group=s1),
        ("episode", C): known(0.9, group=s1),
    }
    fused = fuse_learned(
        ranked(C, A, B, scores=(0.9, 0.5, 0.5)),
        [],
        known=rows,
        limit=3,
        depth=50,
        model=only("session_similarity_gap", -0.1),
    )
    assert order(fused)[-1] == A


def test_contributions_add_up_to_the_score():
    rows = {("episode", A): known(0.7), ("episode", B): known(0.4)}
    model = rerank.shipped_model()
    for hit in fuse_learned(
        ranked(A, B, scores=(0.7, 0.4)),
        ranked(B, scores=(2.0,)),
        known=rows,
        limit=2,
        depth=50,
        model=model,
    ):
        logit = sum(hit.contributions.values())
        assert hit.fused_score == pytest.approx(1 / (1 + math.exp(-logit)))
        assert set(hit.contributions) == {"base", *SIGNALS}
        assert hit.contributions["base"] == pytest.approx(model.base)


def test_a_candidate_without_a_row_is_left_out():
    fused = fuse_learned(ranked(A, B), [], known={("episode", A): known()}, limit=5, depth=50)
    assert order(fused) == [A]


def test_the_shipped_model_reads_every_signal_it_was_trained_on():
    model = rerank.shipped_model()
    inner = ~model.leaf
    assert set(model.feature[inner].tolist()) <= set(range(len(SIGNALS)))
    assert (model.left[inner] > 0).all() and (model.right[inner] > 0).all()


def test_a_model_of_other_signals_is_refused(tmp_path):
    stale = tmp_path / "ranker.json"
    stale.write_text('{"signals": ["similarity"], "bias": 0, "trees": []}')
    with pytest.raises(ValueError, match="other signals"):
        Model.load(stale)


def test_a_window_episode_never_scores_below_one_outside_the_window():
    # The window's list is read as deep as the legs (30), deeper than the limit (10).
    inside = [uuid.UUID(int=100 + i) for i in range(30)]
    outside = uuid.UUID(int=999)
    ordered = [Fused("episode", key, None, None, None) for key in [outside, *inside]]
    fused = _with_lists(
        ordered, {"time": {("episode", c.memory_id): c for c in ranked(*inside)}}, limit=10, k=60
    )
    parts = {f.memory_id: f.contributions["time"] for f in fused}
    assert parts[outside] < min(parts[key] for key in inside)
    assert parts[outside] == pytest.approx(1 / (60 + 31))


def walk(model: Model, row: np.ndarray) -> tuple[float, np.ndarray]:
    """One row through every tree, node by node: its logit and each signal's part of it."""
    logit, parts = model.bias, np.zeros(len(row))
    for tree in range(model.value.shape[0]):
        node = 0
        while not model.leaf[tree, node]:
            signal = model.feature[tree, node]
            child = (model.left if row[signal] <= model.threshold[tree, node] else model.right)[
                tree, node
            ]
            parts[signal] += model.value[tree, child] - model.value[tree, node]
            node = child
        logit += model.value[tree, node]
    return logit, parts


def many_candidates(
    count: int,
) -> tuple[list[RankedCandidate], list[RankedCandidate], dict[tuple[str, uuid.UUID], Known]]:
    """`count` memories in both lists in different orders, of varied similarity, length and
    session."""
    ids = [uuid.UUID(int=1000 + i) for i in range(count)]
    similarity = {key: 0.2 + (i * 37 % count) / (2 * count) for i, key in enumerate(ids)}
    semantic = ranked(
        *sorted(ids, key=lambda key: -similarity[key]),
        scores=tuple(sorted(similarity.values(), reverse=True)),
    )
    by_words = sorted(ids, key=lambda key: key.int * 7 % 11)[: count // 2]
    keyword = ranked(*by_words, scores=tuple(float(20 - i % 20) for i in range(len(by_words))))
    rows = {
        ("episode", key): known(
            similarity[key],
            own=similarity[key] - (i % 3) / 20,
            group=("chat", i % 5),
            length=40 + i * 13,
        )
        for i, key in enumerate(ids)
    }
    return semantic, keyword, rows


def test_the_model_scores_and_splits_a_row_as_its_trees_walked_one_by_one():
    model = rerank.shipped_model()
    semantic, keyword, rows = many_candidates(40)
    table = signals(
        [
            Candidate(
                rows[key].similarity,
                rows[key].own_similarity,
                0.0,
                rank,
                None,
                rows[key].group,
                rows[key].length,
            )
            for rank, key in enumerate(rows, 1)
        ],
        depth=30,
    )
    scores, parts = model.scores(table), model.contributions(table)
    for index, row in enumerate(table):
        logit, expected = walk(model, row)
        assert scores[index] == pytest.approx(1 / (1 + math.exp(-logit)))
        assert parts[index] == pytest.approx(expected)


def test_the_results_shown_carry_the_contributions_of_the_whole_computation():
    # Only the results shown get their contributions computed; they must be those that
    # computing every candidate's gives.
    model = rerank.shipped_model()
    semantic, keyword, rows = many_candidates(60)
    shown = fuse_learned(semantic, keyword, known=rows, limit=10, depth=30, model=model)
    keys = list(
        dict.fromkeys(
            [
                *((c.memory_type, c.memory_id) for c in semantic),
                *((c.memory_type, c.memory_id) for c in keyword),
            ]
        )
    )
    semantic_rank = {(c.memory_type, c.memory_id): c for c in semantic}
    keyword_rank = {(c.memory_type, c.memory_id): c for c in keyword}
    table = signals(
        [
            Candidate(
                rows[key].similarity,
                rows[key].own_similarity,
                keyword_rank[key].score if key in keyword_rank else 0.0,
                semantic_rank[key].rank if key in semantic_rank else None,
                keyword_rank[key].rank if key in keyword_rank else None,
                rows[key].group,
                rows[key].length,
            )
            for key in keys
        ],
        depth=30,
    )
    every = model.contributions(table)
    assert len(shown) == 10
    assert [hit.fused_score for hit in shown] == sorted(model.scores(table), reverse=True)[:10]
    for hit in shown:
        full = every[keys.index((hit.memory_type, hit.memory_id))]
        assert hit.contributions == {
            "base": model.base,
            **{name: float(full[i]) for i, name in enumerate(SIGNALS)},
        }
