"""Pure lifecycle maths: permanence, decay, recency, effectiveness, maturity."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from app.formulas import lifecycle

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("permanence", "rate"),
    [
        ("permanent", 0.0),
        ("stable", 0.002),
        ("standard", 0.008),
        ("volatile", 0.03),
        ("ephemeral", 0.1),
    ],
)
def test_permanence_maps_to_decay_rate(permanence: str, rate: float) -> None:
    assert lifecycle.decay_rate_for(permanence) == rate


def test_invalid_permanence_lists_valid_levels() -> None:
    with pytest.raises(ValueError) as error:
        lifecycle.decay_rate_for("forever")
    for level in ("permanent", "stable", "standard", "volatile", "ephemeral"):
        assert level in str(error.value)


def test_effective_confidence_decays_exponentially() -> None:
    confirmed = NOW - timedelta(days=10)
    value = lifecycle.effective_confidence(0.9, 0.03, confirmed, NOW)
    assert value == pytest.approx(0.9 * math.exp(-0.03 * 10))


def test_permanent_confidence_never_decays() -> None:
    assert lifecycle.effective_confidence(0.7, 0.0, NOW - timedelta(days=3650), NOW) == 0.7
    assert lifecycle.effective_confidence(0.7, 0.0, None, NOW) == 0.7


def test_unconfirmed_memory_has_zero_confidence() -> None:
    assert lifecycle.effective_confidence(1.0, 0.008, None, NOW) == 0.0


def test_recency_halves_every_seven_days() -> None:
    assert lifecycle.recency_score(NOW, NOW) == 1.0
    assert lifecycle.recency_score(NOW - timedelta(days=7), NOW) == pytest.approx(0.5)
    assert lifecycle.recency_score(NOW - timedelta(days=14), NOW) == pytest.approx(0.25)


def test_recency_is_zero_when_never_referenced_and_clamped_for_future() -> None:
    assert lifecycle.recency_score(None, NOW) == 0.0
    assert lifecycle.recency_score(NOW + timedelta(days=2), NOW) == 1.0


def test_helpful_effectiveness_is_success_over_applied() -> None:
    assert lifecycle.helpful_effectiveness(3, 4) == 0.75


def test_harmful_effectiveness_weighs_harm_four_times() -> None:
    assert lifecycle.harmful_effectiveness(5, 1) == pytest.approx(5 / (5 + 4 + 0.01))
    assert lifecycle.harmful_effectiveness(0, 3) == 0.0


def test_candidate_promoted_at_five_successes_and_point_six() -> None:
    promoted = lifecycle.promoted_maturity
    assert promoted("candidate", success_count=5, effectiveness=0.6, age_days=0) == "established"
    assert promoted("candidate", success_count=4, effectiveness=1.0, age_days=0) == "candidate"
    assert promoted("candidate", success_count=9, effectiveness=0.59, age_days=0) == "candidate"


def test_established_promoted_to_proven_needs_age_of_thirty_days() -> None:
    promoted = lifecycle.promoted_maturity
    assert promoted("established", success_count=15, effectiveness=0.8, age_days=30) == "proven"
    assert (
        promoted("established", success_count=15, effectiveness=0.8, age_days=29.9) == "established"
    )
    assert (
        promoted("established", success_count=14, effectiveness=0.9, age_days=40) == "established"
    )


def test_demotions_step_one_level_down() -> None:
    demoted = lifecycle.demoted_maturity
    assert demoted("proven", effectiveness=0.79) == "established"
    assert demoted("proven", effectiveness=0.8) == "proven"
    assert demoted("established", effectiveness=0.59) == "candidate"
    assert demoted("established", effectiveness=0.6) == "established"
    assert demoted("candidate", effectiveness=0.0) == "candidate"


def test_inversion_needs_three_harmful_and_low_effectiveness() -> None:
    assert lifecycle.needs_inversion(harmful_count=3, effectiveness=0.29)
    assert not lifecycle.needs_inversion(harmful_count=2, effectiveness=0.0)
    assert not lifecycle.needs_inversion(harmful_count=5, effectiveness=0.3)


def test_anti_pattern_content_format() -> None:
    assert lifecycle.anti_pattern_content("use tabs", ["broke CI", "annoyed Bob"]) == (
        "ANTI-PATTERN: Do NOT use tabs. This caused problems because: broke CI; annoyed Bob"
    )


def test_after_harmful_flags_inversion_and_demotes() -> None:
    outcome = lifecycle.after_harmful(
        maturity="established", applied_count=7, success_count=5, harmful_count=2
    )
    assert outcome.applied_count == 8
    assert outcome.harmful_count == 3
    assert outcome.effectiveness_score == pytest.approx(5 / (5 + 12 + 0.01))
    assert outcome.maturity == "candidate"
    assert outcome.needs_inversion  # 3 harmful and 0.294 < 0.3
