"""A reranker the operator brings: a rerank endpoint reorders the first fused results of
/v1/search within its time budget; when it hangs or fails the fused order is served and the
response says it was skipped."""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from app.core.config import RerankerSettings
from app.main import create_app
from app.retrieval.user_reranker import UserReranker, open_reranker
from tests.support.factories import store_episode
from tests.support.live_server import serve_in_thread
from tests.support.mcp import connect, ok
from tests.support.rerank_stub import RerankStub, documents_of
from tests.support.waiting import slowest_answer, until

SECRET = "rerank-secret-key"
TEXTS = [
    "The garden needs watering every morning in July",
    "Our garden shed holds the tools and the old bicycle",
    "Grandma planted tomatoes in the garden last spring",
    "The garden party is on Saturday at four",
    "A fox crossed the garden at night",
]
QUERY = "what is growing in the garden"


def by_text(index: int, text: str) -> float:
    """Scores that put the fused order's last result first (longer text, lower score)."""
    return 1.0 / len(text)


@pytest.fixture
async def rerank_stub() -> AsyncIterator[RerankStub]:
    """A rerank endpoint on a loopback port, ranking by `by_text`."""
    server = await RerankStub(by_text).start()
    yield server
    await server.stop()


@pytest.fixture
async def use_reranker(
    app: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Callable[..., UserReranker]]:
    """Configure the app's reranker for one test (closed and unset afterwards)."""
    opened: list[UserReranker] = []

    def configure(**fields: Any) -> UserReranker:
        reranker = open_reranker(RerankerSettings(**fields))
        assert reranker is not None
        opened.append(reranker)
        monkeypatch.setattr(app.state, "reranker", reranker, raising=False)
        return reranker

    yield configure
    for reranker in opened:
        await reranker.aclose()


@pytest.fixture
def endpoint(use_reranker: Callable[..., UserReranker], rerank_stub: RerankStub) -> RerankStub:
    """The stub configured as the app's reranker (Cohere shape, a bearer key)."""
    use_reranker(
        kind="endpoint",
        base_url=rerank_stub.base_url,
        model="stub-rerank",
        api_key=SECRET,
        timeout_ms=400,
    )
    return rerank_stub


async def stored(client: Any) -> dict[str, str]:
    """The garden episodes, by content -> id."""
    return {text: (await store_episode(client, text))["id"] for text in TEXTS}


async def search(client: Any, **fields: Any) -> dict[str, Any]:
    response = await client.post("/v1/search", json={"query": QUERY, "fusion": "rrf", **fields})
    assert response.status_code == 200, response.text
    return response.json()


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


async def test_the_endpoint_reorders_the_fused_results(client, endpoint):
    by_content = await stored(client)
    fused = await search(client, rerank=False)
    reranked = await search(client)
    assert reranked["reranker"] == {"applied": True, "reason": None, "scored": len(TEXTS)}
    expected = sorted(TEXTS, key=lambda text: -by_text(0, text))
    assert ids(reranked) == [by_content[text] for text in expected]
    assert ids(reranked) != ids(fused)
    for hit in reranked["results"]:
        assert hit["contributions"]["reranker"] == pytest.approx(by_text(0, hit["content"]))
        assert {"semantic", "keyword"} <= set(hit["contributions"])  # fusion's parts stay
    [request] = endpoint.requests
    assert endpoint.paths == ["/v1/rerank"]
    assert request["query"] == QUERY and request["model"] == "stub-rerank"
    assert request["top_n"] == len(TEXTS)
    assert documents_of(request) == [hit["content"] for hit in fused["results"]]
    assert endpoint.headers[0]["authorization"] == f"Bearer {SECRET}"


async def test_a_limit_below_top_n_is_filled_from_the_reranked_pool(client, endpoint):
    by_content = await stored(client)
    fused = await search(client, rerank=False, limit=2)
    answer = await search(client, limit=2)
    best = sorted(TEXTS, key=lambda text: -by_text(0, text))[:2]
    assert ids(answer) == [by_content[text] for text in best]
    assert len(documents_of(endpoint.requests[0])) == len(TEXTS)
    assert ids(fused) != ids(answer)


async def test_a_hung_endpoint_costs_the_budget_and_serves_the_fused_order(client, endpoint):
    await stored(client)
    fused = await search(client, rerank=False)
    endpoint.hang()
    started = time.monotonic()
    answer = await search(client)
    took = time.monotonic() - started
    assert answer["reranker"] == {"applied": False, "reason": "timeout", "scored": 0}
    assert ids(answer) == ids(fused)
    assert all("reranker" not in hit["contributions"] for hit in answer["results"])
    assert took < 0.4 + 1.5, took
    assert len(endpoint.requests) == 1 and not endpoint.held.is_set()  # still hanging


@pytest.mark.parametrize(
    ("status", "body"),
    [(500, '{"message": "boom"}'), (200, '{"results": [{"index": 99}]}'), (200, "not json")],
)
async def test_a_failing_endpoint_serves_the_fused_order(client, endpoint, caplog, status, body):
    await stored(client)
    fused = await search(client, rerank=False)
    endpoint.fail(status, body)
    with caplog.at_level(logging.DEBUG):
        answer = await search(client)
    assert answer["reranker"] == {"applied": False, "reason": "error", "scored": 0}
    assert ids(answer) == ids(fused)
    assert "reranker skipped" in caplog.text
    assert SECRET not in caplog.text


def huge_answer(count: int, size: int = 60_000_000) -> bytes:
    """A rerank answer of about `size` bytes: valid results (the last document first), over
    and over."""
    once = ", ".join(f'{{"index": {i}, "relevance_score": {i}}}' for i in range(count))
    return ('{"results": [' + ", ".join([once] * (size // len(once))) + "]}").encode()


@pytest.mark.parametrize("declared", [True, False], ids=["with its length", "without"])
async def test_a_huge_answer_serves_the_fused_order_within_the_budget(
    client, use_reranker, rerank_stub, declared
):
    await stored(client)
    use_reranker(kind="endpoint", base_url=rerank_stub.base_url, timeout_ms=800)
    fused = await search(client, rerank=False)
    rerank_stub.fail(200, huge_answer(len(TEXTS)), declared=declared)
    started = time.monotonic()
    answer = await search(client)
    took = time.monotonic() - started
    assert answer["reranker"] == {"applied": False, "reason": "error", "scored": 0}
    assert ids(answer) == ids(fused)
    assert all("reranker" not in hit["contributions"] for hit in answer["results"])
    assert took < 0.8 + 0.5, took
    assert len(rerank_stub.requests) == 1


async def test_other_requests_are_answered_while_a_huge_answer_arrives(
    client, use_reranker, rerank_stub
):
    await stored(client)
    use_reranker(kind="endpoint", base_url=rerank_stub.base_url, timeout_ms=800)
    rerank_stub.fail(200, huge_answer(len(TEXTS)))
    searching = asyncio.ensure_future(search(client))
    await until(lambda: len(rerank_stub.requests) == 1, timeout=10, message="the rerank request")
    slowest = await slowest_answer(client, "/healthz", searching)
    assert slowest < 0.5, f"/healthz waited {slowest:.2f} s while the answer was read"
    assert (await searching)["reranker"]["applied"] is False


IDLE_IN_TRANSACTION = (
    "SELECT count(*) AS connections FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND state LIKE 'idle in transaction%'"
)


async def test_no_transaction_stays_open_while_the_reranker_is_waited_on(
    client, use_reranker, rerank_stub, sql
):
    await stored(client)
    use_reranker(kind="endpoint", base_url=rerank_stub.base_url, timeout_ms=30_000)
    rerank_stub.hang()
    searches = [asyncio.ensure_future(search(client)) for _ in range(3)]
    try:
        await until(
            lambda: len(rerank_stub.requests) == 3,
            timeout=10,
            message="three rerank requests in flight",
        )
        [held] = await sql(IDLE_IN_TRANSACTION)
    finally:
        rerank_stub.held.set()
        answers = await asyncio.gather(*searches)
    assert held["connections"] == 0
    assert [answer["reranker"]["applied"] for answer in answers] == [True] * 3
    assert [len(answer["results"]) for answer in answers] == [len(TEXTS)] * 3


async def test_rerank_false_never_calls_the_endpoint(client, endpoint):
    await stored(client)
    answer = await search(client, rerank=False)
    assert answer["reranker"] == {"applied": False, "reason": "not_requested", "scored": 0}
    assert len(answer["results"]) == len(TEXTS)
    assert endpoint.requests == []


async def test_tei_requests_and_answers(client, use_reranker, rerank_stub):
    by_content = await stored(client)
    rerank_stub.shape = "tei"
    use_reranker(kind="endpoint", base_url=rerank_stub.base_url, api="tei")
    answer = await search(client, mode="keyword")
    assert answer["reranker"]["applied"] is True
    assert ids(answer)[0] == by_content[max(TEXTS, key=lambda text: by_text(0, text))]
    assert answer["results"][0]["contributions"] == {
        "reranker": pytest.approx(by_text(0, answer["results"][0]["content"]))
    }
    [request] = rerank_stub.requests
    assert set(request) == {"query", "texts", "truncate"}
    assert "authorization" not in rerank_stub.headers[0]


async def test_an_empty_search_does_not_call_the_endpoint(client, endpoint):
    answer = await search(client, query="nothing stored matches")
    assert answer["results"] == []
    assert answer["reranker"] == {"applied": False, "reason": "no_results", "scored": 0}
    assert endpoint.requests == []


async def test_without_a_reranker_the_response_says_none(client):
    await store_episode(client, TEXTS[0])
    answer = await search(client)
    assert answer["reranker"] is None
    assert "reranker" not in answer["results"][0]["contributions"]


async def test_a_server_started_with_a_reranker_reranks_mcp_searches(
    settings, rerank_stub, client, api_key_for
):
    by_content = await stored(client)
    configured = settings.model_copy(
        update={"reranker": RerankerSettings(kind="endpoint", base_url=rerank_stub.base_url)}
    )
    key = await api_key_for("default")
    with serve_in_thread(create_app(configured)) as url:
        async with connect(f"{url}/mcp", {"Authorization": f"Bearer {key}"}) as mcp:
            answer = ok(await mcp.call_tool("memory_search", {"query": QUERY, "limit": 1}))
    assert answer["reranker"]["applied"] is True
    assert [hit["id"] for hit in answer["results"]] == [
        by_content[max(TEXTS, key=lambda text: by_text(0, text))]
    ]
    assert len(rerank_stub.requests) == 1


def tiny_cross_encoder(directory: Path) -> Path:
    """A one-layer BERT cross-encoder whose vocabulary is the garden texts' words, saved where
    a CrossEncoder reads it (nothing downloaded). Its [CLS] attends evenly to every token, so
    each text gets a score of its own from random word vectors."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = sorted({word.lower() for text in [*TEXTS, QUERY] for word in text.split()})
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(tokens)})
    torch.manual_seed(7)
    width = 16
    model = BertForSequenceClassification(
        BertConfig(
            vocab_size=len(tokens),
            hidden_size=width,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
            num_labels=1,
        )
    )
    with torch.no_grad():
        attention = model.bert.encoder.layer[0].attention
        attention.self.query.weight.zero_()
        attention.self.key.weight.zero_()
        attention.self.value.weight.copy_(torch.eye(width))
        attention.output.dense.weight.copy_(10 * torch.eye(width))
        model.bert.embeddings.word_embeddings.weight.normal_(0, 1)
        model.bert.pooler.dense.weight.copy_(torch.eye(width))
        model.classifier.weight.normal_(0, 1)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


async def test_a_local_cross_encoder_reorders_the_fused_results(client, use_reranker, tmp_path):
    from sentence_transformers import CrossEncoder

    path = await asyncio.to_thread(tiny_cross_encoder, tmp_path)
    by_content = await stored(client)
    fused = await search(client, rerank=False)
    reranker = use_reranker(kind="cross-encoder", model_path=str(path), timeout_ms=30_000)
    await asyncio.to_thread(reranker.load)
    answer = await search(client)
    model = CrossEncoder(str(path), local_files_only=True)
    fused_texts = [hit["content"] for hit in fused["results"]]
    expected = dict(
        zip(fused_texts, model.predict([(QUERY, text) for text in fused_texts]), strict=True)
    )
    assert len({round(float(score), 4) for score in expected.values()}) == len(TEXTS)
    assert answer["reranker"] == {"applied": True, "reason": None, "scored": len(TEXTS)}
    assert ids(answer) == [
        by_content[text] for text in sorted(fused_texts, key=lambda text: -expected[text])
    ]
    assert ids(answer) != ids(fused)
    for hit in answer["results"]:
        assert hit["contributions"]["reranker"] == pytest.approx(float(expected[hit["content"]]))
