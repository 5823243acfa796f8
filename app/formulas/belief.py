"""Pure maths of what is believed of a fact: contradictions, and search's staleness factor."""

from dataclasses import dataclass

# Each contradiction halves a fact's stored confidence.
CONTRADICTION_FACTOR = 0.5
# A fact contradicted this many times more than it was validated is retracted.
RETRACT_AT_NET_CONTRADICTIONS = 3
# Search keeps this share of a fact's fused score however stale it is (see stale_factor).
STALE_FLOOR = 0.5


@dataclass(frozen=True)
class Contradicted:
    """A fact's confidence and count after one more contradiction, and whether it ends."""

    confidence: float
    contradiction_count: int
    retracted: bool


def after_contradiction(
    *, confidence: float, contradiction_count: int, validation_count: int
) -> Contradicted:
    """confidence * 0.5; retracted once contradictions exceed validations by 3."""
    count = contradiction_count + 1
    return Contradicted(
        confidence * CONTRADICTION_FACTOR,
        count,
        count - validation_count >= RETRACT_AT_NET_CONTRADICTIONS,
    )


def stale_factor(effective_confidence: float) -> float:
    """What a fact's fused search score is multiplied by: 0.5 + 0.5 * effective confidence
    (clamped to [0, 1]), so a fresh fact keeps its score and a fully decayed one half."""
    clamped = min(1.0, max(0.0, effective_confidence))
    return STALE_FLOOR + (1.0 - STALE_FLOOR) * clamped
