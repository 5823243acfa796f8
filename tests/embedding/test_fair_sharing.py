"""Fair sharing of the model threads: tenants served in turn, cancelled chunks dropped, a
second worker for the other tenants while one tenant's call runs, a background worker at
low priority for a batch's further chunks."""

import asyncio
import os
import threading
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from app.core.errors import Unavailable
from app.embedding import Embedder, get_embedder
from app.embedding.scheduler import ChunkEvent

LONG_TEXT = "Caroline told Melanie about the support group and the adoption agencies. " * 3
BIG_BATCH = [f"{i} {LONG_TEXT}" for i in range(64)]
CHUNK = 4  # 64 texts -> 16 model calls


def _small_chunks(workers: int, background_workers: int = 0) -> Iterator[Embedder]:
    """A loaded ONNX embedder with small chunks, sharing the default export."""
    # The text bound alone cuts the calls: the token bound is set out of the way.
    embedder = Embedder(
        models_dir=get_embedder().models_dir,
        chunk_size=CHUNK,
        chunk_tokens=65_536,
        workers=workers,
        background_workers=background_workers,
    )
    embedder.load()
    yield embedder
    embedder.close()


@pytest.fixture
def embedder() -> Iterator[Embedder]:
    """Small chunks and one model worker, so the calls' order is the queue's."""
    yield from _small_chunks(workers=1)


def _count(embedder: Embedder, kind: str, tenant_id: str) -> int:
    return sum(1 for e in embedder.chunk_record if (e.kind, e.tenant_id) == (kind, tenant_id))


async def _until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until `condition` holds (the suite's timeout bounds a hang)."""
    while not condition():
        await asyncio.sleep(0.001)


async def test_big_batch_is_cut_into_bounded_model_calls(embedder: Embedder) -> None:
    vectors = await embedder.aembed_batch(BIG_BATCH, tenant_id="H")
    started = [e for e in embedder.chunk_record if e.kind == "started"]
    assert [e.size for e in started] == [CHUNK] * 16
    assert np.allclose(vectors, embedder.embed_batch(BIG_BATCH), atol=1e-5)


async def test_single_request_is_served_before_the_rest_of_a_big_batch(embedder: Embedder) -> None:
    big = asyncio.create_task(embedder.aembed_batch(BIG_BATCH, tenant_id="H"))
    await _until(lambda: _count(embedder, "started", "H") >= 1)
    await embedder.aembed("what did Caroline research?", tenant_id="A")
    await big
    record = embedder.chunk_record
    queued_a = record.index(ChunkEvent("queued", "A", 1))
    first_start_after = next(e for e in record[queued_a:] if e.kind == "started")
    assert first_start_after == ChunkEvent("started", "A", 1)
    # H's batch was still in flight: some of its chunks ran after A's.
    assert any(e.kind == "started" and e.tenant_id == "H" for e in record[queued_a:])


async def test_two_big_batches_take_turns(embedder: Embedder) -> None:
    first = asyncio.create_task(embedder.aembed_batch(BIG_BATCH, tenant_id="H"))
    await _until(lambda: _count(embedder, "started", "H") >= 1)
    await embedder.aembed_batch(BIG_BATCH[: 3 * CHUNK], tenant_id="B")
    await first
    record = embedder.chunk_record
    queued_b = record.index(ChunkEvent("queued", "B", CHUNK))
    order = [e.tenant_id for e in record[queued_b:] if e.kind == "started"][:6]
    assert order == ["B", "H", "B", "H", "B", "H"]


async def test_a_tenants_query_is_served_before_its_own_batchs_queued_chunks(
    embedder: Embedder,
) -> None:
    big = asyncio.create_task(embedder.aembed_batch(BIG_BATCH, tenant_id="H", bulk=True))
    await _until(lambda: _count(embedder, "started", "H") >= 1)
    query = "what did Caroline research?"
    vector = await embedder.aembed(query, tenant_id="H")
    await big
    record = embedder.chunk_record
    queued = record.index(ChunkEvent("queued", "H", 1))
    started = [e for e in record[queued:] if e.kind == "started"]
    assert started[0] == ChunkEvent("started", "H", 1)
    # The batch's chunks queued before the query ran after it.
    assert started[1:] and all(
        e == ChunkEvent("started", "H", CHUNK, bulk=True) for e in started[1:]
    )
    assert vector == pytest.approx(embedder.embed(query), abs=1e-5)


async def test_a_tenants_queries_keep_their_order_ahead_of_its_batch(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = embedder.load()
    tracked = _Tracked(backend.encode)
    monkeypatch.setattr(backend, "encode", tracked)
    big = asyncio.create_task(embedder.aembed_batch(BIG_BATCH, tenant_id="H", bulk=True))
    await _until(lambda: tracked.calls == 1)  # the batch's first call holds the worker
    write = asyncio.create_task(embedder.aembed_batch([LONG_TEXT] * 6, tenant_id="H"))
    await _until(lambda: _count(embedder, "queued", "H") == 16 + 2)
    search = asyncio.create_task(embedder.aembed("the query after", tenant_id="H"))
    await _until(lambda: _count(embedder, "queued", "H") == 16 + 3)
    tracked.gate.set()
    await asyncio.gather(big, write, search)
    started = [e for e in embedder.chunk_record if e.kind == "started"]
    # The single write's two chunks, then the search, then the rest of the batch.
    assert [(e.size, e.bulk) for e in started[1:4]] == [(CHUNK, False), (2, False), (1, False)]
    assert all(e.bulk for e in started[4:]) and len(started) == 16 + 3


@pytest.mark.parametrize("bulk", [False, True])
async def test_cancelled_request_drops_its_queued_chunks(embedder: Embedder, bulk: bool) -> None:
    big = asyncio.create_task(embedder.aembed_batch(BIG_BATCH, tenant_id="H", bulk=bulk))
    await _until(lambda: _count(embedder, "started", "H") >= 1)
    big.cancel()
    with pytest.raises(asyncio.CancelledError):
        await big
    assert embedder.pending_chunks == 0
    started = _count(embedder, "started", "H")
    # The model thread goes on to the next tenant; no more of H's chunks run.
    assert len(await embedder.aembed("after the cancel", tenant_id="A")) == 384
    assert _count(embedder, "started", "H") == started < 16
    assert _count(embedder, "dropped", "H") == 16 - started


async def test_aembed_without_a_tenant_uses_the_system_tenant(embedder: Embedder) -> None:
    vector = await embedder.aembed("no tenant given")
    assert vector == pytest.approx(embedder.embed("no tenant given"), abs=1e-6)
    assert ChunkEvent("started", "_system", 1) in embedder.chunk_record


async def test_empty_batch_gives_an_empty_list(embedder: Embedder) -> None:
    assert await embedder.aembed_batch([], tenant_id="A") == []


async def test_closed_embedder_refuses_async_calls_as_unavailable(embedder: Embedder) -> None:
    embedder.close()
    with pytest.raises(Unavailable, match="shutting down") as refused:
        await embedder.aembed("too late", tenant_id="A")
    assert refused.value.status_code == 503
    assert refused.value.retry_after is not None


async def test_queued_queries_of_several_tenants_share_one_model_call(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = embedder.load()
    encode = backend.encode
    calls: list[list[str]] = []
    gate = threading.Event()

    def gated_encode(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        if len(calls) == 1:
            gate.wait(timeout=30)  # hold H's first chunk until the queries are queued
        return encode(texts)

    monkeypatch.setattr(backend, "encode", gated_encode)
    big = asyncio.create_task(embedder.aembed_batch(BIG_BATCH, tenant_id="H"))
    await _until(lambda: len(calls) == 1)
    queries = {tenant: f"what did {tenant} say about the support group?" for tenant in "ABC"}
    asked = [
        asyncio.create_task(embedder.aembed(text, tenant_id=tenant))
        for tenant, text in queries.items()
    ]
    await _until(lambda: all(_count(embedder, "queued", t) == 1 for t in queries))
    gate.set()
    vectors = await asyncio.gather(*asked)
    await big
    assert calls[1] == list(queries.values())  # one call, in the rotation's order
    assert len(calls) == 1 + 1 + 16 - 1  # H's chunks each still run alone
    for vector, text in zip(vectors, queries.values(), strict=True):
        assert np.allclose(vector, embedder.embed(text), atol=1e-5)


@pytest.fixture
def two_workers() -> Iterator[Embedder]:
    """Small chunks and two model workers."""
    yield from _small_chunks(workers=2)


def _priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class _Tracked:
    """Wraps a backend's encode: counts calls in progress and records each call's size and
    thread priority; holds the first until `gate` is set (by the test, or by a second call
    starting when `release_on_second`)."""

    def __init__(
        self, encode: Callable[[list[str]], np.ndarray], *, release_on_second: bool = False
    ) -> None:
        self.encode = encode
        self.release_on_second = release_on_second
        self.lock = threading.Lock()
        self.running = 0
        self.most_running = 0
        self.calls = 0
        self.sizes: list[int] = []
        self.priorities: list[int] = []
        self.gate = threading.Event()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self.lock:
            self.calls += 1
            self.sizes.append(len(texts))
            self.priorities.append(_priority())
            first = self.calls == 1
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            if self.release_on_second and self.calls == 2:
                self.gate.set()
        try:
            if first:
                self.gate.wait(timeout=30)
            return self.encode(texts)
        finally:
            with self.lock:
                self.running -= 1


async def test_second_worker_serves_a_search_while_a_big_batch_call_runs(
    two_workers: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = two_workers.load()
    tracked = _Tracked(backend.encode)
    monkeypatch.setattr(backend, "encode", tracked)
    big = asyncio.create_task(two_workers.aembed_batch(BIG_BATCH, tenant_id="H"))
    await _until(lambda: tracked.calls == 1)
    try:  # one worker would hold A's query behind H's call until the gate's timeout
        vector = await asyncio.wait_for(
            two_workers.aembed("what did Caroline research?", tenant_id="A"), timeout=15
        )
        assert tracked.running == 1 and tracked.calls == 2  # H's first call still held
    finally:
        tracked.gate.set()
    await big
    assert vector == pytest.approx(two_workers.embed("what did Caroline research?"), abs=1e-5)


async def test_second_worker_serves_a_tenants_query_beside_its_own_batchs_call(
    two_workers: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = two_workers.load()
    tracked = _Tracked(backend.encode)
    monkeypatch.setattr(backend, "encode", tracked)
    big = asyncio.create_task(two_workers.aembed_batch(BIG_BATCH, tenant_id="H", bulk=True))
    await _until(lambda: tracked.calls == 1)
    try:  # waiting for the batch's call in progress would hold the query until the timeout
        vector = await asyncio.wait_for(
            two_workers.aembed("what did Caroline research?", tenant_id="H"), timeout=15
        )
        # H's first call still held, and no other chunk of the batch started beside it.
        assert tracked.running == 1 and tracked.calls == 2 and tracked.sizes[1] == 1
    finally:
        tracked.gate.set()
    await big
    assert tracked.most_running == 2 and tracked.calls == 1 + 16
    assert vector == pytest.approx(two_workers.embed("what did Caroline research?"), abs=1e-5)


async def test_workers_never_run_two_calls_of_one_tenant_at_once(
    two_workers: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = two_workers.load()
    encode = backend.encode
    alone = _Tracked(encode)
    alone.gate.set()
    monkeypatch.setattr(backend, "encode", alone)
    vectors = await two_workers.aembed_batch(BIG_BATCH, tenant_id="H")
    assert alone.calls == 16 and alone.most_running == 1
    assert np.allclose(vectors, two_workers.embed_batch(BIG_BATCH), atol=1e-5)
    # H's first call is held until another starts: it can only be B's.
    shared = _Tracked(encode, release_on_second=True)
    monkeypatch.setattr(backend, "encode", shared)
    await asyncio.gather(
        two_workers.aembed_batch(BIG_BATCH, tenant_id="H"),
        two_workers.aembed_batch(BIG_BATCH, tenant_id="B"),
    )
    assert shared.calls == 32 and shared.most_running == 2


@pytest.fixture
def with_background() -> Iterator[Embedder]:
    """Small chunks, one model worker and one background worker."""
    yield from _small_chunks(workers=1, background_workers=1)


async def test_background_worker_runs_a_batch_beside_its_call_at_low_priority(
    with_background: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = with_background.load()
    # H's first call is held until another starts: with one worker, only the background
    # worker can start it.
    shared = _Tracked(backend.encode, release_on_second=True)
    monkeypatch.setattr(backend, "encode", shared)
    vectors = await with_background.aembed_batch(BIG_BATCH, tenant_id="H", bulk=True)
    assert shared.calls == 16 and shared.most_running == 2
    assert set(shared.priorities) == {_priority(), 19}
    assert np.allclose(vectors, with_background.embed_batch(BIG_BATCH), atol=1e-5)


async def test_single_queries_wait_to_share_a_call_instead_of_the_background_worker(
    with_background: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = with_background.load()
    tracked = _Tracked(backend.encode)
    monkeypatch.setattr(backend, "encode", tracked)
    first = asyncio.create_task(with_background.aembed("the first query", tenant_id="A"))
    await _until(lambda: tracked.calls == 1)
    queries = [f"query {i} about the adoption agencies" for i in range(3)]
    rest = [
        asyncio.create_task(with_background.aembed(q, tenant_id=t))
        for q, t in zip(queries, ["A", "A", "B"], strict=True)
    ]
    await _until(lambda: with_background.pending_chunks == 3)
    # What an idle background worker asks when woken: no queued single query is its to take.
    scheduler = with_background._scheduler
    with scheduler._condition:
        assert scheduler._next_tenant(background=True) is None
    assert tracked.calls == 1
    tracked.gate.set()
    await first
    vectors = await asyncio.gather(*rest)
    assert tracked.sizes == [1, 3] and tracked.most_running == 1
    for vector, text in zip(vectors, queries, strict=True):
        assert vector == pytest.approx(with_background.embed(text), abs=1e-5)
