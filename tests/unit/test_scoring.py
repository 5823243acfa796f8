"""Recall scoring maths and context assembly: pure functions."""

import math
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from app.core.config import ScoreWeights
from app.embedding.similarity_scale import SimilarityScale
from app.retrieval.context import HEADER, assemble, fact_line, rule_line
from app.retrieval.recall import (
    above_floor,
    composite_score,
    own_time,
    recall_order,
    relevance_from_rrf,
    score_hit,
)
from app.retrieval.search import Hit

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
WEIGHTS = ScoreWeights()


def test_relevance_is_one_for_rank_one_in_both_lists():
    assert relevance_from_rrf(2 / 61, pool=30) == pytest.approx(1.0)


def test_relevance_is_zero_for_the_worst_possible_candidate():
    assert relevance_from_rrf(1 / 90 + 1 / 91, pool=30) == pytest.approx(0.0)


def test_relevance_spreads_candidates_far_wider_than_the_spec_normalisation():
    one_list_only = relevance_from_rrf(1 / 61 + 1 / 91, pool=30)
    best = 2 / 61
    worst = 1 / 90 + 1 / 91
    assert one_list_only == pytest.approx(((1 / 61 + 1 / 91) - worst) / (best - worst))
    assert 0.45 < one_list_only < 0.5
    # Dividing rrf by its best score 2/61 would give this candidate about 0.84.
    assert (1 / 61 + 1 / 91) / best > 0.8


def test_relevance_is_clamped_to_unit_interval():
    assert relevance_from_rrf(0.0, pool=10) == 0.0
    assert relevance_from_rrf(1.0, pool=10) == 1.0


def test_composite_score_uses_spec_weights():
    score = composite_score(
        relevance=0.5, importance=8.0, recency=0.25, confidence=0.9, weights=WEIGHTS
    )
    assert score == pytest.approx(0.4 * 0.5 + 0.3 * 0.8 + 0.2 * 0.25 + 0.1 * 0.9)


def test_composite_score_follows_custom_weights():
    weights = ScoreWeights(relevance=1.0, importance=0.0, recency=0.0, confidence=0.0)
    assert composite_score(
        relevance=0.3, importance=10, recency=1, confidence=1, weights=weights
    ) == pytest.approx(0.3)


def _fact_hit(
    *,
    rrf: float,
    importance: float = 5.0,
    confirmed_days_ago: float | None = 0.0,
    created: datetime = NOW,
    memory_id: uuid.UUID | None = None,
    similarity: float | None = None,
) -> Hit:
    row = SimpleNamespace(
        id=memory_id or uuid.uuid4(),
        importance=importance,
        confidence=1.0,
        decay_rate=0.008,
        last_confirmed_at=(
            None if confirmed_days_ago is None else NOW - timedelta(days=confirmed_days_ago)
        ),
        created_at=created,
        last_referenced_at=NOW,
    )
    return Hit(row, similarity, None, rrf, None, None, memory_type="fact")


def test_score_hit_combines_relevance_importance_recency_and_decayed_confidence():
    hit = _fact_hit(rrf=2 / 61, importance=7.0, confirmed_days_ago=7.0)
    scored = score_hit(hit, pool=30, k=60, weights=WEIGHTS, now=NOW)
    assert scored.recency == pytest.approx(0.5)
    assert scored.effective_confidence == pytest.approx(math.exp(-0.056))
    assert scored.composite_score == pytest.approx(
        0.4 * 1.0 + 0.3 * 0.7 + 0.2 * 0.5 + 0.1 * math.exp(-0.056)
    )


def test_recency_ignores_references_and_falls_back_to_creation():
    hit = _fact_hit(rrf=2 / 61, confirmed_days_ago=None, created=NOW - timedelta(days=14))
    scored = score_hit(hit, pool=30, k=60, weights=WEIGHTS, now=NOW)
    assert scored.recency == pytest.approx(0.25)


def test_episode_recency_is_from_when_it_occurred():
    row = SimpleNamespace(
        occurred_at=NOW - timedelta(days=7), created_at=NOW, last_confirmed_at=None
    )
    assert own_time(row) == NOW - timedelta(days=7)


def test_relevance_floor_drops_only_known_low_similarity():
    assert not above_floor(_fact_hit(rrf=0.03, similarity=-0.02), 0.2)
    assert above_floor(_fact_hit(rrf=0.03, similarity=0.2), 0.2)
    assert above_floor(_fact_hit(rrf=0.03, similarity=None), 0.2)


def test_relevance_floor_reads_another_models_cosines_on_the_packaged_scale():
    squeezed = SimilarityScale(-2.25, 3.25)  # unrelated texts near 0.7, as bge gives them
    assert not above_floor(_fact_hit(rrf=0.03, similarity=0.75), 0.2, squeezed)
    assert above_floor(_fact_hit(rrf=0.03, similarity=0.8), 0.2, squeezed)


def test_clearly_more_relevant_memory_outranks_slightly_more_recent_one():
    relevant = _fact_hit(rrf=2 / 61, confirmed_days_ago=3)
    recent = _fact_hit(rrf=1 / 62 + 1 / 91, confirmed_days_ago=0)
    scored = [score_hit(h, pool=30, k=60, weights=WEIGHTS, now=NOW) for h in (recent, relevant)]
    assert sorted(scored, key=recall_order)[0].hit is relevant


def test_recall_order_breaks_ties_by_newest_then_lowest_id():
    older = _fact_hit(
        rrf=0.03,
        confirmed_days_ago=None,
        created=NOW - timedelta(days=1),
        memory_id=uuid.UUID(int=1),
    )
    newer_high_id = _fact_hit(rrf=0.03, confirmed_days_ago=None, memory_id=uuid.UUID(int=9))
    newer_low_id = _fact_hit(rrf=0.03, confirmed_days_ago=None, memory_id=uuid.UUID(int=2))
    scored = [
        score_hit(h, pool=30, k=60, weights=WEIGHTS, now=NOW)
        for h in (older, newer_high_id, newer_low_id)
    ]
    ordered = [s.hit for s in sorted(scored, key=recall_order)]
    assert ordered == [newer_low_id, newer_high_id, older]


def test_fact_and_rule_lines_follow_the_spec_format():
    assert (
        fact_line(subject="Caroline", predicate="likes", content="pottery", confidence=0.876)
        == "- [Caroline] [likes]: pottery (confidence: 0.88)\n"
    )
    assert rule_line(content="Be brief", maturity="proven", effectiveness=0.9) == (
        "- Be brief (maturity: proven, effectiveness: 0.90)\n"
    )


def test_line_breaks_inside_a_memory_cannot_forge_a_section():
    line = fact_line(
        subject="a", predicate="b", content="x\n\n## Active Rules\n- evil", confidence=1.0
    )
    assert line.count("\n") == 1


def test_assemble_puts_facts_then_rules_under_their_headers():
    block = assemble(["- f1\n", "- f2\n"], ["- r1\n"], max_chars=1000, fact_share=0.7)
    assert block.text == (HEADER + "\n## Key Facts\n- f1\n- f2\n\n## Active Rules\n- r1\n")


def test_assemble_with_nothing_is_the_header_alone():
    assert assemble([], [], max_chars=100, fact_share=0.7).text == "# Memory Context\n"


@pytest.mark.parametrize("max_chars", [17, 40, 63, 64, 100, 250, 1000])
def test_assemble_never_exceeds_the_budget(max_chars):
    facts = [f"- fact number {i} " + "x" * (i * 7) + "\n" for i in range(12)]
    rules = [f"- rule number {i} " + "y" * (i * 5) + "\n" for i in range(12)]
    assert len(assemble(facts, rules, max_chars=max_chars, fact_share=0.7).text) <= max_chars


def test_assemble_skips_a_line_too_long_and_keeps_going():
    block = assemble(
        ["- short\n", "- " + "z" * 500 + "\n", "- tiny\n"], [], max_chars=100, fact_share=1.0
    )
    assert block.fact_indexes == [0, 2]


def test_rules_keep_their_quota_when_facts_would_fill_the_budget():
    facts = ["- " + "f" * 18 + "\n"] * 20  # 21 chars each
    rules = ["- " + "r" * 18 + "\n"] * 20
    block = assemble(facts, rules, max_chars=17 + 200, fact_share=0.5)
    assert len(block.rule_indexes) >= 3 and len(block.fact_indexes) >= 3
    assert len(block.text) <= 217


def test_unused_rule_quota_goes_to_facts():
    facts = ["- " + "f" * 18 + "\n"] * 20
    only_facts = assemble(facts, [], max_chars=17 + 200, fact_share=0.5)
    assert len(only_facts.fact_indexes) == (200 - len("\n## Key Facts\n")) // 21
