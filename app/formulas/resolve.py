"""Pure scoring of entity resolution: tier base scores, hint boosts, ordering."""

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

BASE_SCORES: dict[str, float] = {"exact": 100.0, "alias": 80.0, "prefix": 50.0, "fuzzy": 20.0}
TIER_MATCH: dict[int, str] = {1: "exact", 2: "alias", 3: "prefix", 4: "fuzzy"}
GRAPH_BOOST_MAX = 20.0
FUZZY_THRESHOLD = 0.3
FUZZY_MIN_CHARS = 3
FACTS_PER_CANDIDATE = 500
SCORE_DECIMALS = 4

_WORD = re.compile(r"[^\W_]+")


@dataclass
class Candidate:
    """One entity found by a tier, with its score so far."""

    entity_id: uuid.UUID
    canonical_name: str
    entity_type: str
    aliases: list[str]
    name_match: str
    score: float = field(init=False)

    def __post_init__(self) -> None:
        self.score = BASE_SCORES[self.name_match]


def tokenize(text: str) -> set[str]:
    """The lower-case words (letters and digits) of `text`."""
    return set(_WORD.findall(text.lower()))


def hint_terms(topic: str | None, mentioned_with: Iterable[str]) -> set[str]:
    """The words of the topic and of every name mentioned alongside."""
    terms = tokenize(topic or "")
    for name in mentioned_with:
        terms |= tokenize(name)
    return terms


def jaccard(left: set[str], right: set[str]) -> float:
    """|left & right| / |left | right|; 0 when both are empty."""
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def graph_boost(hints: set[str], fact_terms: set[str]) -> float:
    """Up to GRAPH_BOOST_MAX for the word overlap of the hints and a candidate's facts."""
    if not hints or not fact_terms:
        return 0.0
    return GRAPH_BOOST_MAX * jaccard(hints, fact_terms)


def apply_boosts(
    candidates: Iterable[Candidate],
    *,
    fact_terms: Mapping[uuid.UUID, set[str]],
    hints: set[str],
    domain_scores: Mapping[uuid.UUID, float],
) -> None:
    """Add the graph boost and the caller's domain score to each candidate's score."""
    for candidate in candidates:
        candidate.score += graph_boost(hints, fact_terms.get(candidate.entity_id, set()))
        candidate.score += domain_scores.get(candidate.entity_id, 0.0)


def rank(candidates: Iterable[Candidate], limit: int) -> list[Candidate]:
    """Score descending then canonical_name ascending; scores rounded to 4 places."""
    ranked = sorted(
        candidates,
        key=lambda c: (-round(c.score, SCORE_DECIMALS), c.canonical_name, str(c.entity_id)),
    )
    for candidate in ranked:
        candidate.score = round(candidate.score, SCORE_DECIMALS)
    return ranked[:limit]
