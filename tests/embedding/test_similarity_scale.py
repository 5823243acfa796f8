"""A model's cosines are moved onto the packaged model's scale before the learned ranker
reads them: measured once per model over loopback, retried after the model failed."""

import asyncio
import uuid

import numpy as np
import pytest

from app.embedding import Embedder, get_embedder, similarity_scale
from app.embedding.remote import RemoteEndpoint
from app.embedding.similarity_scale import IDENTITY, SimilarityScale, fit, reference, scale_of
from app.repositories.search.candidates import RankedCandidate
from app.retrieval.fusion import Known, fuse_learned
from tests.support.embeddings_stub import Answer, EmbeddingsStub, embeddings_stub

# Sentences outside the reference set: the map is checked on pairs it was not fitted on.
HELD_OUT = [
    "Caroline adopted a rescue dog from the shelter last weekend.",
    "Melanie's dog is a golden retriever she found at an animal shelter.",
    "The build broke after someone upgraded the compiler on the CI machines.",
    "Our continuous integration fails since the compiler upgrade.",
    "I am going to Rome in June to see the Colosseum.",
    "Jon plans a trip to Italy this summer.",
    "The soup needs more salt and a little lemon juice.",
    "We repainted the hallway white and replaced the light fixtures.",
    "The quarterly revenue fell by four percent.",
    "My grandmother knits socks for the whole family every winter.",
]


def squeeze(rows: np.ndarray, seed: int = 7) -> np.ndarray:
    """Vectors moved towards one fixed direction, as bge-like models' are: cosines 0.7 to 1."""
    direction = np.random.default_rng(seed).standard_normal(rows.shape[1])
    moved = rows + 1.5 * direction / np.linalg.norm(direction)
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def cosines(rows: np.ndarray) -> np.ndarray:
    return (rows @ rows.T)[np.triu_indices(len(rows), 1)]


def test_the_packaged_model_reads_its_own_cosines():
    embedder = get_embedder()
    sentences = reference().sentences
    measured = fit(
        embedder.embed_batch(sentences, query=True), embedder.embed_batch(sentences), reference()
    )
    # The shipped mean and spread are the packaged model's (bench/study/similarity_reference).
    assert measured.shift == pytest.approx(0.0, abs=1e-4)
    assert measured.factor == pytest.approx(1.0, abs=1e-3)
    assert scale_of(embedder) is IDENTITY


def test_a_squeezed_models_cosines_come_back_to_the_packaged_scale():
    embedder = get_embedder()
    sentences = reference().sentences
    squeezed = squeeze(np.asarray(embedder.embed_batch(sentences)))
    scale = fit(squeezed, squeezed, reference())
    native = np.asarray(embedder.embed_batch(HELD_OUT))
    before = cosines(native)
    raw = cosines(squeeze(native))
    assert np.abs(raw - before).mean() > 0.5  # unrelated sentences near 0.7 once squeezed
    restored = np.array([scale(c) for c in raw])
    assert np.abs(restored - before).mean() < 0.03
    assert np.abs(restored - before).max() < 0.08


def test_too_flat_a_model_keeps_its_cosines():
    same = [[1.0, 0.0, 0.0]] * 5 + [[0.999, 0.0447, 0.0]] * 5
    assert fit(same, same, reference()) is IDENTITY


def test_learned_fusion_reads_similarities_on_the_scale():
    a, b = uuid.UUID(int=1), uuid.UUID(int=2)
    native = {("episode", a): (0.62, "s1"), ("episode", b): (0.18, "s2")}
    squeezed = SimilarityScale(-2.25, 3.25)  # cos = -2.25 + 3.25 cos' inverts (cos + 2.25) / 3.25

    def known(values: dict) -> dict:
        return {key: Known(sim, sim, group, 80, None) for key, (sim, group) in values.items()}

    semantic = [RankedCandidate("episode", a, 1, 0.0), RankedCandidate("episode", b, 2, 0.0)]
    on_native = fuse_learned(semantic, [], known=known(native), limit=2, depth=30)
    moved = {key: ((sim + 2.25) / 3.25, group) for key, (sim, group) in native.items()}
    raw = fuse_learned(semantic, [], known=known(moved), limit=2, depth=30)
    read = fuse_learned(semantic, [], known=known(moved), limit=2, depth=30, scale=squeezed)
    assert [f.fused_score for f in read] == pytest.approx([f.fused_score for f in on_native])
    assert [f.fused_score for f in raw] != pytest.approx([f.fused_score for f in on_native])


def _remote(stub: EmbeddingsStub) -> Embedder:
    endpoint = RemoteEndpoint(
        base_url=stub.base_url,
        batch_size=64,
        timeout_seconds=5,
        max_attempts=1,
        backoff_seconds=0.05,
    )
    return Embedder(
        "stub-model", backend="openai", remote=endpoint, workers=1, background_workers=0
    )


async def _until(condition, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_a_remote_model_is_measured_once_and_again_after_a_failure(monkeypatch):
    with embeddings_stub(dimensions=24) as stub:
        embedder = _remote(stub)
        stub.answer(Answer(status=503, body='{"error": "down"}'))
        assert scale_of(embedder) is IDENTITY  # starts measuring; raw cosines meanwhile
        await _until(lambda: len(stub.received) >= 1 and not similarity_scale._running)
        assert scale_of(embedder) is IDENTITY
        assert len(stub.received) == 1  # not asked again before the retry interval

        monkeypatch.setattr(similarity_scale, "RETRY_SECONDS", 0.0)
        scale_of(embedder)
        # The task leaves `_running` on the loop turn after it stores the scale.
        await _until(lambda: scale_of(embedder) is not IDENTITY and not similarity_scale._running)
        asked = stub.inputs()
        assert set(reference().sentences) <= set(asked)
        # The stub's random 24-dimension vectors spread about 1/sqrt(24): the map narrows them.
        assert 0.2 < scale_of(embedder).factor < 0.8
        scale_of(embedder)
        assert stub.inputs() == asked and not similarity_scale._running  # measured once
