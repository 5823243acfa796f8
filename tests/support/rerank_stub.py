"""A rerank endpoint on 127.0.0.1 (real HTTP) that scores, hangs or fails as a test says."""

import asyncio
import json
from collections.abc import Callable
from typing import Any

from tests.support.llm_stub import LLMStub, Reply

# A document's score from its position in the request and its text.
Scoring = Callable[[int, str], float]


def documents_of(request: dict[str, Any]) -> list[str]:
    """The documents of a rerank request, in either request shape."""
    return list(request.get("documents", request.get("texts", [])))


class RerankStub(LLMStub):
    """Answers POST /rerank with `scoring`'s scores, in Cohere's answer shape or TEI's;
    `hang()` holds every answer until the stub stops, `fail(status)` answers that status."""

    def __init__(self, scoring: Scoring, *, shape: str = "cohere") -> None:
        super().__init__()
        self.scoring = scoring
        self.shape = shape
        self.held = asyncio.Event()
        self.status = 200
        self.raw: str | bytes | None = None
        self.declared = True
        self.responder = self._answer

    def hang(self) -> None:
        """Hold every answer until the stub stops."""
        self.held.clear()
        self.responder = lambda request: Reply(body="[]", gate=self.held)

    def fail(
        self, status: int = 500, body: str | bytes = '{"message": "boom"}', *, declared: bool = True
    ) -> None:
        """Answer every request with `status` and `body` (without its length unless
        `declared`)."""
        self.status, self.raw, self.declared = status, body, declared

    def scores(self, request: dict[str, Any]) -> list[float]:
        """The scores it gives the documents of `request`, in their order."""
        return [self.scoring(index, text) for index, text in enumerate(documents_of(request))]

    def _answer(self, request: dict[str, Any]) -> Reply:
        if self.raw is not None:
            return Reply(status=self.status, body=self.raw, declared=self.declared)
        scores = self.scores(request)
        if self.shape == "tei":
            answer: Any = [{"index": i, "score": s} for i, s in enumerate(scores)]
        else:
            answer = {"results": [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]}
        return Reply(body=json.dumps(answer))

    async def stop(self) -> None:
        self.held.set()
        await super().stop()
