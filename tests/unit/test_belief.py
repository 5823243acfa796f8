"""The belief formulas: contradictions halve confidence and end a fact, staleness scales."""

import pytest

from app.formulas.belief import after_contradiction, stale_factor


def test_a_contradiction_halves_confidence_and_counts():
    after = after_contradiction(confidence=0.8, contradiction_count=0, validation_count=0)
    assert (after.confidence, after.contradiction_count, after.retracted) == (0.4, 1, False)


@pytest.mark.parametrize(
    ("contradictions", "validations", "retracted"),
    [(2, 0, True), (1, 0, False), (3, 1, True), (2, 1, False), (5, 3, True)],
)
def test_retraction_comes_when_contradictions_exceed_validations_by_three(
    contradictions, validations, retracted
):
    after = after_contradiction(
        confidence=1.0, contradiction_count=contradictions, validation_count=validations
    )
    assert after.retracted is retracted


@pytest.mark.parametrize(
    ("effective", "factor"), [(1.0, 1.0), (0.0, 0.5), (0.3, 0.65), (1.7, 1.0), (-0.2, 0.5)]
)
def test_stale_factor_keeps_at_least_half(effective, factor):
    assert stale_factor(effective) == pytest.approx(factor)
