"""The 'openai' backend against an OpenAI-compatible embeddings server over real HTTP."""

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from pydantic import ValidationError

from app.core.config import Settings
from app.embedding import Embedder
from app.embedding.embedder import build_embedder, remote_endpoint
from app.embedding.remote import RemoteEmbeddingError, RemoteEndpoint
from tests.support.embeddings_stub import Answer, EmbeddingsStub, embeddings_stub, stub_vector

MODEL = "text-embedding-stub"
SECRET = "sk-stub-secret-0123456789"


@pytest.fixture
def stub() -> Iterator[EmbeddingsStub]:
    with embeddings_stub(dimensions=24) as running:
        yield running


def _embedder(stub: EmbeddingsStub, **options: object) -> Embedder:
    endpoint = RemoteEndpoint(
        base_url=stub.base_url,
        api_key=SECRET,
        batch_size=4,
        timeout_seconds=5,
        max_attempts=3,
        backoff_seconds=0.05,
    )
    return Embedder(
        MODEL, backend="openai", remote=endpoint, workers=1, background_workers=0, **options
    )  # type: ignore[arg-type]


def _unit(values: list[float]) -> np.ndarray:
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


async def test_vectors_arrive_normalised_in_input_order_with_the_models_dimension(
    stub: EmbeddingsStub,
) -> None:
    embedder = _embedder(stub)
    texts = [f"memory number {i}" for i in range(10)]
    vectors = await embedder.aembed_batch(texts, tenant_id="A")
    assert embedder.dimensions == 24
    assert len(vectors) == 10
    for text, vector in zip(texts, vectors, strict=True):
        assert vector.dtype == np.float32
        assert vector == pytest.approx(_unit(stub_vector(text, 24)), abs=1e-6)
    requests = [r for r in stub.received if r.body["input"] != ["dimensions"]]
    assert {r.path for r in requests} == {"/v1/embeddings"}
    assert {r.body["model"] for r in requests} == {MODEL}
    assert max(len(r.body["input"]) for r in requests) <= 4  # the batch size
    embedder.close()


async def test_the_query_and_document_prefixes_are_sent(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, query_prefix="query: ", document_prefix="passage: ")
    await embedder.aembed("where does Ann work", tenant_id="A")
    await embedder.aembed_batch(["Ann works at the harbour"], tenant_id="A")
    assert stub.inputs()[-2:] == ["query: where does Ann work", "passage: Ann works at the harbour"]
    plain = _embedder(stub)
    assert plain.model_version != embedder.model_version  # other texts, other vectors
    embedder.close()
    plain.close()


def test_the_api_key_is_sent_as_a_bearer_token_and_never_shown(stub: EmbeddingsStub) -> None:
    settings = Settings(
        embedding_backend="openai",
        embedding_base_url=stub.base_url,
        embedding_model=MODEL,
        embedding_api_key=SECRET,
    )
    endpoint = remote_endpoint(settings)
    assert endpoint is not None
    Embedder(MODEL, backend="openai", remote=endpoint).embed("hello")
    assert stub.received[-1].headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(settings)
    assert SECRET not in repr(endpoint)


def test_retry_after_is_honoured_on_429_and_503(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    stub.answer(
        Answer(429, {"Retry-After": "1"}, '{"error": "slow down"}'),
        Answer(503, {"Retry-After": "1"}, '{"error": "loading"}'),
    )
    vector = embedder.embed("patience")
    assert vector == pytest.approx(_unit(stub_vector("patience", 24)), abs=1e-6)
    first, second, third = (r.at for r in stub.received[-3:])
    # The backoff alone would wait 0.05 s then 0.1 s.
    assert second - first >= 0.9
    assert third - second >= 0.9


def test_retries_are_bounded_and_the_error_says_what_failed(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    stub.answer(*[Answer(503, {"Retry-After": "0"}, '{"error": "overloaded"}')] * 3)
    with pytest.raises(RemoteEmbeddingError) as caught:
        embedder.embed("never")
    assert len(stub.received) == 3  # max_attempts
    message = str(caught.value)
    assert "3 attempt(s)" in message and "HTTP 503" in message and "overloaded" in message
    assert stub.base_url in message and SECRET not in message


def test_a_refusal_is_not_retried_and_names_the_status(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    stub.answer(Answer(401, {}, '{"error": {"message": "Incorrect API key provided"}}'))
    with pytest.raises(RemoteEmbeddingError, match="HTTP 401.*Incorrect API key"):
        embedder.embed("no")
    assert len(stub.received) == 1


def test_an_answer_of_the_wrong_shape_is_a_clear_error(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    stub.answer(Answer(200, {}, '{"choices": []}'))
    with pytest.raises(RemoteEmbeddingError, match="other than an embeddings list"):
        embedder.embed("odd")
    stub.answer(Answer(200, {}, '{"data": [{"index": 0, "embedding": [1, 0]}]}'))
    with pytest.raises(RemoteEmbeddingError, match="2-d vectors .* 24-d expected"):
        embedder.embed("short")


def test_an_unreachable_endpoint_is_a_clear_error() -> None:
    endpoint = RemoteEndpoint(
        base_url="http://127.0.0.1:9/v1", max_attempts=2, backoff_seconds=0.01, timeout_seconds=2
    )
    embedder = Embedder(MODEL, backend="openai", remote=endpoint)
    with pytest.raises(RemoteEmbeddingError, match="2 attempt.*connection failed"):
        embedder.load()


async def test_remote_calls_take_tenants_in_turn_off_the_event_loop(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    gate = threading.Event()
    stub.answer(Answer(gate=gate))
    batch = asyncio.create_task(
        embedder.aembed_batch([f"history {i}" for i in range(16)], tenant_id="A", bulk=True)
    )
    deadline = time.monotonic() + 10
    while not stub.received:  # A's first request is held at the server
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    query = asyncio.create_task(embedder.aembed("what now", tenant_id="B"))
    await asyncio.sleep(0.05)  # the loop runs while a remote call is in flight
    gate.set()
    await asyncio.gather(batch, query)
    order = [r.body["input"] for r in stub.received]
    # B's query went out right after A's request in flight, not after A's whole batch.
    assert order[1] == ["what now"]
    assert len(order) == 5
    embedder.close()


def test_the_openai_backend_needs_an_endpoint_and_a_model() -> None:
    with pytest.raises(ValidationError, match="embedding_base_url"):
        Settings(embedding_backend="openai", embedding_model=MODEL)
    with pytest.raises(ValidationError, match="embedding_model"):
        Settings(embedding_backend="openai", embedding_base_url="http://127.0.0.1:9/v1")


def test_an_answer_with_repeated_indexes_is_refused(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    row = {"index": 0, "embedding": stub_vector("one", 24)}
    stub.answer(*[Answer(body=json.dumps({"data": [row, row]}))] * 3)
    with pytest.raises(RemoteEmbeddingError, match="indexes"):
        embedder.embed_batch(["one", "two"])


def test_an_answer_far_larger_than_its_vectors_is_dropped_unparsed(stub: EmbeddingsStub) -> None:
    embedder = _embedder(stub, dimensions=24)
    row = {"index": 0, "embedding": stub_vector("one", 24), "padding": "x" * 10_000_000}
    stub.answer(*[Answer(body=json.dumps({"data": [row]}))] * 3)
    with pytest.raises(RemoteEmbeddingError, match="more than"):
        embedder.embed("one")


def test_one_deadline_bounds_a_request_whose_answer_drips_in(stub: EmbeddingsStub) -> None:
    endpoint = RemoteEndpoint(
        base_url=stub.base_url, batch_size=4, timeout_seconds=1, max_attempts=1
    )
    embedder = Embedder(MODEL, backend="openai", remote=endpoint, dimensions=24)
    stub.answer(Answer(drip_seconds=0.02))  # about 600 bytes: 12 s in all
    started = time.monotonic()
    with pytest.raises(RemoteEmbeddingError, match="timed out"):
        embedder.embed("slowly")
    assert time.monotonic() - started < 4


def test_texts_are_cut_to_the_remote_models_input_limit(stub: EmbeddingsStub) -> None:
    settings = Settings(
        embedding_backend="openai",
        embedding_base_url=stub.base_url,
        embedding_model=MODEL,
        embedding_dimensions=24,
        embedding_max_input_chars=100,
        embedding_document_prefix="passage: ",
    )
    embedder = build_embedder(settings)
    embedder.embed_batch(["word " * 1000])
    embedder.embed("query " * 1000)
    assert [len(text) for text in stub.inputs()] == [100, 100]
    assert stub.inputs()[0].startswith("passage: word")


async def test_a_text_the_model_refuses_fails_only_its_own_tenants_request(
    stub: EmbeddingsStub,
) -> None:
    embedder = _embedder(stub, dimensions=24)
    stub.refused.add("POISON")
    gate = threading.Event()
    stub.answer(Answer(gate=gate))
    held = asyncio.create_task(embedder.aembed("first", tenant_id="C"))
    deadline = time.monotonic() + 10
    while not stub.received:  # the worker is busy: the next two requests share a call
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    poisoned = asyncio.create_task(embedder.aembed("POISON", tenant_id="A"))
    fine = asyncio.create_task(embedder.aembed("fine", tenant_id="B"))
    await asyncio.sleep(0.05)
    gate.set()
    await held
    with pytest.raises(RemoteEmbeddingError, match="HTTP 400"):
        await poisoned
    assert await fine == pytest.approx(_unit(stub_vector("fine", 24)), abs=1e-6)
    assert ["POISON", "fine"] in [r.body["input"] for r in stub.received]  # joined first
    assert not embedder.failed_recently  # a refused text is no outage
    embedder.close()
