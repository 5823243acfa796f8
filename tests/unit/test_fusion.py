"""Reciprocal Rank Fusion: arithmetic, the limit + 1 rule and the ordering."""

import uuid
from types import SimpleNamespace

import pytest

from app.repositories.search.candidates import LoadedRow, RankedCandidate
from app.retrieval.fusion import (
    FusionWeights,
    fuse,
    known_row,
    rrf_score,
    session_group,
    single_list,
)

A, B, C, D = (uuid.UUID(int=i) for i in range(1, 5))


def ranked(*ids: uuid.UUID, memory_type: str = "episode") -> list[RankedCandidate]:
    return [RankedCandidate(memory_type, memory_id, rank) for rank, memory_id in enumerate(ids, 1)]


def test_rrf_score_adds_reciprocal_ranks_with_k_60():
    assert rrf_score(1, 1, limit=10) == pytest.approx(1 / 61 + 1 / 61)
    assert rrf_score(3, 7, limit=10) == pytest.approx(1 / 63 + 1 / 67)


def test_missing_rank_counts_as_limit_plus_one():
    assert rrf_score(2, None, limit=10) == pytest.approx(1 / 62 + 1 / 71)
    assert rrf_score(None, 4, limit=5) == pytest.approx(1 / 66 + 1 / 64)


def test_rrf_uses_the_given_k():
    assert rrf_score(1, 2, limit=10, k=10) == pytest.approx(1 / 11 + 1 / 12)


def test_fuse_orders_by_rrf_score_descending():
    fused = fuse(ranked(A, B, C), ranked(C, B), limit=3)
    assert [f.memory_id for f in fused] == [C, B, A]
    assert fused[0].rrf_score == pytest.approx(1 / 63 + 1 / 61)
    assert fused[1].rrf_score == pytest.approx(1 / 62 + 1 / 62)
    assert fused[2].rrf_score == pytest.approx(1 / 61 + 1 / 64)


def test_fuse_breaks_rrf_ties_by_semantic_rank():
    # A: semantic 1, keyword absent; B: keyword 1, semantic absent -> identical rrf scores.
    fused = fuse(ranked(A), ranked(B), limit=1)
    assert [f.memory_id for f in fused] == [A]
    both = fuse(ranked(A, C), ranked(B, D), limit=2)
    assert both[0].rrf_score == pytest.approx(both[1].rrf_score)
    assert [f.memory_id for f in both[:2]] == [A, B]
    assert (both[1].semantic_rank, both[1].keyword_rank) == (None, 1)


def test_fuse_keeps_at_most_limit_results():
    assert len(fuse(ranked(A, B, C), ranked(D, C, B), limit=2)) == 2


def test_fuse_treats_same_id_of_different_types_as_different_memories():
    fused = fuse(ranked(A, memory_type="fact"), ranked(A, memory_type="rule"), limit=5)
    assert {(f.memory_type, f.semantic_rank, f.keyword_rank) for f in fused} == {
        ("fact", 1, None),
        ("rule", None, 1),
    }


def test_fuse_of_empty_lists_is_empty():
    assert fuse([], [], limit=10) == []


def test_single_list_keeps_the_ranking_and_has_no_rrf():
    semantic = single_list(ranked(B, A), semantic=True)
    assert [(f.memory_id, f.semantic_rank, f.keyword_rank, f.rrf_score) for f in semantic] == [
        (B, 1, None, None),
        (A, 2, None, None),
    ]
    keyword = single_list(ranked(C), semantic=False)
    assert (keyword[0].semantic_rank, keyword[0].keyword_rank) == (None, 1)


def scored(*pairs, memory_type="episode"):
    return [
        RankedCandidate(memory_type, memory_id, rank, score)
        for rank, (memory_id, score) in enumerate(pairs, 1)
    ]


def test_rrf_contributions_sum_to_the_fused_score():
    [first, *_] = fuse(ranked(A, B), ranked(B, A), limit=2)

    assert first.contributions["time"] == 0.0
    assert sum(first.contributions.values()) == pytest.approx(first.fused_score)
    assert first.fused_score == pytest.approx(first.rrf_score)


def test_weighted_fusion_adds_normalised_scores_times_weights():
    semantic = scored((A, 0.9), (B, 0.5), (C, 0.1))
    keyword = scored((C, 12.0), (B, 6.0))
    fused = fuse(
        semantic,
        keyword,
        limit=3,
        method="weighted",
        weights=FusionWeights(semantic=0.6, keyword=0.4),
    )

    by_id = {f.memory_id: f for f in fused}
    assert by_id[A].contributions == {"semantic": pytest.approx(0.6), "keyword": 0.0, "time": 0.0}
    assert by_id[B].fused_score == pytest.approx(0.6 * 0.5 + 0.4 * 0.0)
    assert by_id[C].fused_score == pytest.approx(0.6 * 0.0 + 0.4 * 1.0)
    assert [f.memory_id for f in fused] == [A, C, B]
    assert all(f.rrf_score is None for f in fused)


def test_weighted_fusion_boosts_the_time_window_by_rank():
    semantic = scored((A, 0.9), (B, 0.85), (C, 0.1))
    fused = fuse(
        semantic,
        [],
        limit=2,
        method="weighted",
        boost=scored((B, 0.0)),
        weights=FusionWeights(semantic=0.5, time=0.25),
    )

    assert [f.memory_id for f in fused] == [B, A]
    assert fused[0].contributions["time"] == pytest.approx(0.25)


def test_a_graph_list_adds_its_own_signal_in_both_fusions():
    graph = scored((C, 0.5))
    rrf = {f.memory_id: f for f in fuse(ranked(A, B), ranked(A, B), limit=3, graph=graph)}
    assert rrf[C].contributions["graph"] == pytest.approx(1 / 61)
    assert rrf[A].contributions["graph"] == 0.0

    weighted = {
        f.memory_id: f
        for f in fuse(
            scored((A, 0.9), (B, 0.1)),
            [],
            limit=3,
            method="weighted",
            graph=graph,
            weights=FusionWeights(graph=0.2),
        )
    }
    assert weighted[C].fused_score == pytest.approx(0.2 * 0.5)


def test_without_a_graph_list_there_is_no_graph_signal():
    [first, *_] = fuse(ranked(A), ranked(A), limit=1)
    assert "graph" not in first.contributions


def test_the_session_group_is_the_given_session_else_the_inferred_one():
    inferred = uuid.uuid4()
    given = SimpleNamespace(
        id=uuid.uuid4(), butler="chat", session_id="visit-1", inferred_session=None
    )
    guessed = SimpleNamespace(
        id=uuid.uuid4(), butler="chat", session_id=None, inferred_session=inferred
    )
    guessed_too = SimpleNamespace(
        id=uuid.uuid4(), butler="chat", session_id=None, inferred_session=inferred
    )
    alone = SimpleNamespace(id=uuid.uuid4(), butler="chat", session_id=None, inferred_session=None)
    assert session_group("episode", given) == ("chat", "visit-1")
    assert session_group("episode", guessed) == session_group("episode", guessed_too)
    assert session_group("episode", guessed) != session_group("episode", alone)
    assert session_group("episode", alone) == ("episode", alone.id)
    fact = SimpleNamespace(
        id=uuid.uuid4(), butler="chat", session_id=None, inferred_session=inferred
    )
    assert session_group("fact", fact) == ("fact", fact.id)


def test_the_learned_ranker_groups_turns_by_their_inferred_session():
    inferred = uuid.uuid4()
    rows = [
        SimpleNamespace(
            id=uuid.uuid4(),
            butler="chat",
            session_id=None,
            inferred_session=session,
            content="turn",
            occurred_at=None,
        )
        for session in (inferred, inferred, None)
    ]
    known = [known_row("episode", LoadedRow(row, 0.5, None, None)) for row in rows]
    assert known[0] is not None and known[1] is not None and known[2] is not None
    assert known[0].group == known[1].group != known[2].group
