"""Pure lifecycle maths: permanence, decay, recency, rule effectiveness and maturity."""

import math
from dataclasses import dataclass
from datetime import datetime

from app.core.constants import SECONDS_PER_DAY

PERMANENCE_DECAY_RATES: dict[str, float] = {
    "permanent": 0.0,
    "stable": 0.002,
    "standard": 0.008,
    "volatile": 0.03,
    "ephemeral": 0.1,
}
RULE_DECAY_RATE = 0.01
NEW_RULE_CONFIDENCE = 0.5

EXPIRED_BELOW = 0.05
FADING_BELOW = 0.2
RECENCY_HALF_LIFE_DAYS = 7.0

ESTABLISHED_MIN_SUCCESS = 5
ESTABLISHED_MIN_EFFECTIVENESS = 0.6
PROVEN_MIN_SUCCESS = 15
PROVEN_MIN_EFFECTIVENESS = 0.8
PROVEN_MIN_AGE_DAYS = 30
INVERSION_MIN_HARMFUL = 3
INVERSION_MAX_EFFECTIVENESS = 0.3
HARMFUL_WEIGHT = 4


def decay_rate_for(permanence: str) -> float:
    """The daily decay rate of a permanence level; ValueError lists the valid levels."""
    try:
        return PERMANENCE_DECAY_RATES[permanence]
    except KeyError:
        valid = ", ".join(PERMANENCE_DECAY_RATES)
        raise ValueError(f"invalid permanence {permanence!r}; valid levels: {valid}") from None


def days_between(earlier: datetime, later: datetime) -> float:
    """Days (fractional, never negative) from `earlier` to `later`."""
    return max(0.0, (later - earlier).total_seconds() / SECONDS_PER_DAY)


def effective_confidence(
    confidence: float, decay_rate: float, last_confirmed_at: datetime | None, now: datetime
) -> float:
    """confidence * exp(-decay_rate * days since last confirmation); 0 when never confirmed."""
    if decay_rate == 0.0:
        return confidence
    if last_confirmed_at is None:
        return 0.0
    return confidence * math.exp(-decay_rate * days_between(last_confirmed_at, now))


def recency_score(at: datetime | None, now: datetime) -> float:
    """exp(-ln2/7 * days since `at`, the memory's own time), clamped to [0, 1]; 0 without one."""
    if at is None:
        return 0.0
    days = days_between(at, now)
    score = math.exp(-math.log(2) / RECENCY_HALF_LIFE_DAYS * days)
    return min(1.0, max(0.0, score))


def helpful_effectiveness(success_count: int, applied_count: int) -> float:
    """Effectiveness after a helpful mark: success / applied."""
    return success_count / applied_count if applied_count else 0.0


def harmful_effectiveness(success_count: int, harmful_count: int) -> float:
    """Effectiveness after a harmful mark: success / (success + 4 * harmful + 0.01)."""
    return success_count / (success_count + HARMFUL_WEIGHT * harmful_count + 0.01)


def promoted_maturity(
    maturity: str, *, success_count: int, effectiveness: float, age_days: float
) -> str:
    """Maturity after a helpful mark: at most one step up when its thresholds are met."""
    if (
        maturity == "candidate"
        and success_count >= ESTABLISHED_MIN_SUCCESS
        and effectiveness >= ESTABLISHED_MIN_EFFECTIVENESS
    ):
        return "established"
    if (
        maturity == "established"
        and success_count >= PROVEN_MIN_SUCCESS
        and effectiveness >= PROVEN_MIN_EFFECTIVENESS
        and age_days >= PROVEN_MIN_AGE_DAYS
    ):
        return "proven"
    return maturity


def demoted_maturity(maturity: str, *, effectiveness: float) -> str:
    """Maturity after a harmful mark: one step down when below the level's threshold."""
    if maturity == "proven" and effectiveness < PROVEN_MIN_EFFECTIVENESS:
        return "established"
    if maturity == "established" and effectiveness < ESTABLISHED_MIN_EFFECTIVENESS:
        return "candidate"
    return maturity


def needs_inversion(*, harmful_count: int, effectiveness: float) -> bool:
    """True when a rule has earned anti-pattern inversion."""
    return harmful_count >= INVERSION_MIN_HARMFUL and effectiveness < INVERSION_MAX_EFFECTIVENESS


def anti_pattern_content(original: str, reasons: list[str]) -> str:
    """The rewritten content of an inverted rule."""
    because = "; ".join(reasons) if reasons else "no reason was recorded"
    return f"ANTI-PATTERN: Do NOT {original}. This caused problems because: {because}"


@dataclass(frozen=True)
class FeedbackOutcome:
    """Counters, score and maturity of a rule after one helpful or harmful mark."""

    applied_count: int
    success_count: int
    harmful_count: int
    effectiveness_score: float
    maturity: str
    needs_inversion: bool


def after_helpful(
    *, maturity: str, applied_count: int, success_count: int, harmful_count: int, age_days: float
) -> FeedbackOutcome:
    """The rule's state after one helpful mark."""
    applied, success = applied_count + 1, success_count + 1
    score = helpful_effectiveness(success, applied)
    new_maturity = maturity
    if maturity != "anti_pattern":
        new_maturity = promoted_maturity(
            maturity, success_count=success, effectiveness=score, age_days=age_days
        )
    return FeedbackOutcome(
        applied,
        success,
        harmful_count,
        score,
        new_maturity,
        needs_inversion(harmful_count=harmful_count, effectiveness=score)
        and maturity != "anti_pattern",
    )


def after_harmful(
    *, maturity: str, applied_count: int, success_count: int, harmful_count: int
) -> FeedbackOutcome:
    """The rule's state after one harmful mark."""
    applied, harmful = applied_count + 1, harmful_count + 1
    score = harmful_effectiveness(success_count, harmful)
    new_maturity = demoted_maturity(maturity, effectiveness=score)
    return FeedbackOutcome(
        applied,
        success_count,
        harmful,
        score,
        new_maturity,
        needs_inversion(harmful_count=harmful, effectiveness=score) and maturity != "anti_pattern",
    )
