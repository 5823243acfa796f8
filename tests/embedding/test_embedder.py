"""The embedding embedder with the packaged all-MiniLM-L6-v2 model."""

import numpy as np

from app.embedding import Embedder, get_embedder


def test_engine_is_a_shared_singleton() -> None:
    assert get_embedder() is get_embedder()


def test_embed_gives_a_384_float32_unit_vector() -> None:
    vector = get_embedder().embed("Caroline adopted a dog")
    assert vector.shape == (384,)
    assert vector.dtype == np.float32
    assert np.isclose(np.linalg.norm(vector), 1.0, rtol=1e-4)


def test_none_and_empty_are_embedded_as_a_space() -> None:
    embedder = get_embedder()
    space = embedder.embed(" ")
    assert np.array_equal(embedder.embed(None), space)
    assert np.array_equal(embedder.embed(""), space)


def test_batch_matches_single_and_empty_batch_is_empty() -> None:
    embedder = get_embedder()
    texts = ["the cat sat", "quarterly revenue grew"]
    batch = embedder.embed_batch(texts)
    assert len(batch) == 2
    for text, vector in zip(texts, batch, strict=True):
        single = embedder.embed(text)
        assert max(abs(a - b) for a, b in zip(single, vector, strict=True)) < 1e-4
    assert embedder.embed_batch([]) == []


def test_related_sentences_are_closer_than_unrelated() -> None:
    embedder = get_embedder()
    dog, puppy, tax = embedder.embed_batch(
        ["I walked my dog", "my puppy loves walks", "file the tax return"]
    )

    assert np.dot(dog, puppy) > np.dot(dog, tax) + 0.2


def test_engine_is_lazy() -> None:
    embedder = Embedder()
    assert not embedder.is_loaded
