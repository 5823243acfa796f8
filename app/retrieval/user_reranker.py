"""The reranker an operator brings (`[reranker]`, off by default): a search's first fused
results reordered by a cross-encoder or a rerank endpoint within a time budget, the fused
order served when it is too slow or fails. Not the learned stage of fusion (rerank.py)."""

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from app.core.config import RerankerSettings
from app.retrieval.fusion import ScoredRow, text_of
from app.retrieval.reranker_backends import (
    CrossEncoderScorer,
    EndpointScorer,
    RerankerError,
    Scorer,
)
from app.schemas.search import RerankerSkip

logger = logging.getLogger(__name__)

Row = TypeVar("Row", bound=ScoredRow)
# The key of the reranker's score in each result's contributions.
CONTRIBUTION = "reranker"


@dataclass(frozen=True)
class Outcome:
    """What the reranker did to one search: applied, or why not (`timeout`, `error`,
    `not_requested`, `no_results`), and how many results it scored."""

    applied: bool
    reason: RerankerSkip | None = None
    scored: int = 0


class UserReranker:
    """The configured reranker: its settings and what scores for it."""

    def __init__(self, settings: RerankerSettings, scorer: Scorer) -> None:
        self.settings = settings
        self._scorer = scorer

    def load(self) -> None:
        """Get the scorer ready (read a cross-encoder's model); run it off the event loop."""
        self._scorer.load()

    async def aclose(self) -> None:
        """Give back the scorer's connections or thread."""
        await self._scorer.aclose()

    def pool(self, limit: int) -> int:
        """How many fused results a search of `limit` results gives the reranker to read."""
        return max(limit, self.settings.top_n)

    async def reorder(
        self, query: str, rows: Sequence[Row], *, limit: int
    ) -> tuple[list[Row], Outcome]:
        """The first `limit` of `rows` after their first `top_n` are ordered by the
        reranker's score (each carrying it in its contributions); `rows` as they are when
        it takes longer than the time budget or fails."""
        head = list(rows[: self.settings.top_n])
        if not head:
            return [], Outcome(False, "no_results")
        documents = [text_of(row.row)[: self.settings.document_chars] for row in head]
        try:
            async with asyncio.timeout(self.settings.timeout_ms / 1000):
                scores = await self._scorer.scores(query, documents)
        except TimeoutError:
            logger.warning("reranker skipped: no answer within %d ms", self.settings.timeout_ms)
            return list(rows[:limit]), Outcome(False, "timeout")
        except RerankerError as exc:
            logger.warning("reranker skipped: %s", exc)
            return list(rows[:limit]), Outcome(False, exc.reason)
        except Exception as exc:  # a model's own failure must not fail the search
            logger.warning("reranker skipped: %s", type(exc).__name__)
            return list(rows[:limit]), Outcome(False, "error")
        ordered = scored_first(head, scores)
        return [*ordered, *rows[len(head) :]][:limit], Outcome(True, scored=len(scores))


def scored_first(rows: Sequence[Row], scores: dict[int, float]) -> list[Row]:
    """The rows with a score, best first (ties keep their order), each with the score in its
    contributions; then those without one, in their order."""
    scored = sorted(
        (index for index in range(len(rows)) if index in scores), key=lambda index: -scores[index]
    )
    unscored = [rows[index] for index in range(len(rows)) if index not in scores]
    return [
        replace(
            rows[index],
            contributions={**(rows[index].contributions or {}), CONTRIBUTION: scores[index]},
        )
        for index in scored
    ] + unscored


def open_reranker(settings: RerankerSettings) -> UserReranker | None:
    """The configured reranker, not loaded yet; None when it is off."""
    if settings.kind == "off":
        return None
    scorer: Scorer = (
        CrossEncoderScorer(settings)
        if settings.kind == "cross-encoder"
        else EndpointScorer(settings)
    )
    return UserReranker(settings, scorer)


class RerankStep:
    """One search's pass through the reranker: it reads the first `pool` fused results and
    serves the first `limit`; `outcome` says what it did once the search ran."""

    def __init__(self, reranker: UserReranker, *, limit: int) -> None:
        self.reranker = reranker
        self.limit = limit
        self.pool = reranker.pool(limit)
        self.outcome = Outcome(False, "no_results")

    async def apply(self, query: str, rows: Sequence[Row]) -> list[Row]:
        """The rows served, reordered when the reranker answered in time."""
        served, self.outcome = await self.reranker.reorder(query, rows, limit=self.limit)
        return served


def rerank_step(reranker: UserReranker | None, *, wanted: bool, limit: int) -> RerankStep | None:
    """The step of a search of `limit` results; None when no reranker is configured or the
    request turned it off."""
    if reranker is None or not wanted:
        return None
    return RerankStep(reranker, limit=limit)


def outcome_of(reranker: UserReranker | None, step: RerankStep | None) -> Outcome | None:
    """What a search reports of the reranker: nothing when none is configured."""
    if reranker is None:
        return None
    return Outcome(False, "not_requested") if step is None else step.outcome
