"""The operator's reranker without a database: which results it reorders, the answers it
reads, the settings it refuses."""

import asyncio
import uuid
from collections.abc import Sequence
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from app.core.config import RerankerSettings, Settings
from app.retrieval.fusion import ScoredRow
from app.retrieval.reranker_backends import EndpointScorer, RerankerError, answer_scores
from app.retrieval.user_reranker import UserReranker, open_reranker


class FixedScores:
    """A scorer that gives the scores it was made with, after an optional wait."""

    def __init__(
        self, scores: dict[int, float], *, wait: float = 0.0, error: Exception | None = None
    ) -> None:
        self.given, self.wait, self.error = scores, wait, error
        self.seen: list[list[str]] = []

    def load(self) -> None:
        pass

    async def scores(self, query: str, documents: Sequence[str]) -> dict[int, float]:
        self.seen.append(list(documents))
        await asyncio.sleep(self.wait)
        if self.error is not None:
            raise self.error
        return self.given

    async def aclose(self) -> None:
        pass


def rows(*texts: str) -> list[ScoredRow]:
    return [
        ScoredRow(
            SimpleNamespace(id=uuid.uuid4(), content=text),
            None,
            None,
            None,
            None,
            None,
            contributions={"semantic": 0.01},
        )
        for text in texts
    ]


def contents(served: Sequence[ScoredRow]) -> list[str]:
    return [row.row.content for row in served]


def reranker(scorer: FixedScores, **fields: object) -> UserReranker:
    return UserReranker(RerankerSettings(kind="endpoint", base_url="http://x", **fields), scorer)


async def test_only_the_first_top_n_are_reordered_and_the_rest_keep_their_order():
    scorer = FixedScores({0: 0.1, 1: 0.9})
    served, outcome = await reranker(scorer, top_n=2).reorder(
        "q", rows("a", "b", "c", "d"), limit=4
    )
    assert contents(served) == ["b", "a", "c", "d"]
    assert scorer.seen == [["a", "b"]]
    assert [row.contributions for row in served] == [
        {"semantic": 0.01, "reranker": 0.9},
        {"semantic": 0.01, "reranker": 0.1},
        {"semantic": 0.01},
        {"semantic": 0.01},
    ]
    assert (outcome.applied, outcome.scored) == (True, 2)


async def test_a_document_left_unscored_follows_the_scored_ones():
    served, _ = await reranker(FixedScores({2: 0.5, 0: 0.2})).reorder(
        "q", rows("a", "b", "c"), limit=2
    )
    assert contents(served) == ["c", "a"]


async def test_documents_are_cut_to_document_chars():
    scorer = FixedScores({})
    await reranker(scorer, document_chars=100).reorder("q", rows("x" * 150), limit=1)
    assert scorer.seen == [["x" * 100]]


@pytest.mark.parametrize(
    ("scorer", "reason"),
    [
        (FixedScores({0: 1.0}, wait=5), "timeout"),
        (FixedScores({}, error=RerankerError("HTTP 503")), "error"),
        (FixedScores({}, error=RerankerError("read timeout", reason="timeout")), "timeout"),
        (FixedScores({}, error=RuntimeError("the model broke")), "error"),
    ],
)
async def test_a_slow_or_failing_scorer_leaves_the_fused_order(scorer, reason):
    served, outcome = await reranker(scorer, timeout_ms=50).reorder(
        "q", rows("a", "b", "c"), limit=2
    )
    assert contents(served) == ["a", "b"]
    assert all("reranker" not in row.contributions for row in served)
    assert (outcome.applied, outcome.reason) == (False, reason)


@pytest.mark.parametrize(
    ("answer", "scores"),
    [
        (
            {
                "results": [
                    {"index": 1, "relevance_score": 0.7},
                    {"index": 0, "relevance_score": 0.2},
                ]
            },
            {1: 0.7, 0: 0.2},
        ),
        ({"data": [{"index": 0, "relevance_score": 1}]}, {0: 1.0}),
        ([{"index": 0, "score": 0.3}, {"index": 1, "score": -2.5}], {0: 0.3, 1: -2.5}),
    ],
)
def test_either_answer_shape_is_read(answer, scores):
    assert answer_scores(answer, 2) == scores


@pytest.mark.parametrize(
    "answer",
    [
        {"results": [{"index": 2, "relevance_score": 0.1}]},  # no such document
        {"results": [{"index": 0}]},
        [{"index": "0", "score": 0.1}],
        [{"index": 0, "score": float("nan")}],
        [{"index": True, "score": 0.1}],
        {"error": "overloaded"},
        "ok",
    ],
)
def test_an_answer_without_valid_scores_is_refused(answer):
    with pytest.raises(ValueError):
        answer_scores(answer, 2)


def test_request_shapes():
    cohere = EndpointScorer(
        RerankerSettings(kind="endpoint", base_url="http://x/v2", model="rerank-v3.5")
    )
    assert cohere.body("q", ["a", "b"]) == {
        "model": "rerank-v3.5",
        "query": "q",
        "documents": ["a", "b"],
        "top_n": 2,
    }
    tei = EndpointScorer(RerankerSettings(kind="endpoint", base_url="http://x", api="tei"))
    assert tei.body("q", ["a"]) == {"query": "q", "texts": ["a"], "truncate": True}


def test_off_by_default_and_each_kind_needs_its_source(monkeypatch):
    assert Settings().reranker.kind == "off"
    assert open_reranker(Settings().reranker) is None
    with pytest.raises(ValidationError, match="needs base_url"):
        RerankerSettings(kind="endpoint")
    with pytest.raises(ValidationError, match="needs model_path"):
        RerankerSettings(kind="cross-encoder")
    with pytest.raises(ValidationError):
        RerankerSettings(kind="endpoint", base_url="http://x", top_n=201)
    monkeypatch.setenv("ENGRAM_RERANKER__KIND", "endpoint")
    monkeypatch.setenv("ENGRAM_RERANKER__BASE_URL", "http://tei:8080")
    monkeypatch.setenv("ENGRAM_RERANKER__API_KEY", "sekrit")
    configured = Settings().reranker
    assert (configured.kind, configured.base_url) == ("endpoint", "http://tei:8080")
    assert "sekrit" not in repr(configured)


def test_a_cross_encoder_path_that_is_no_directory_is_refused_at_load(tmp_path):
    opened = open_reranker(
        RerankerSettings(kind="cross-encoder", model_path=str(tmp_path / "missing"))
    )
    assert opened is not None
    with pytest.raises(ValueError, match="not a directory"):
        opened.load()
