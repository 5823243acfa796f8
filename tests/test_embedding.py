"""The embedding engine with the packaged all-MiniLM-L6-v2 model."""

import math

from app.embedding import EmbeddingEngine, get_embedding_engine


def test_engine_is_a_shared_singleton() -> None:
    assert get_embedding_engine() is get_embedding_engine()


def test_embed_gives_384_unit_floats() -> None:
    vector = get_embedding_engine().embed("Caroline adopted a dog")
    assert len(vector) == 384
    assert all(isinstance(x, float) for x in vector)
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)


def test_none_and_empty_are_embedded_as_a_space() -> None:
    engine = get_embedding_engine()
    space = engine.embed(" ")
    assert engine.embed(None) == space
    assert engine.embed("") == space


def test_batch_matches_single_and_empty_batch_is_empty() -> None:
    engine = get_embedding_engine()
    texts = ["the cat sat", "quarterly revenue grew"]
    batch = engine.embed_batch(texts)
    assert len(batch) == 2
    for text, vector in zip(texts, batch, strict=True):
        single = engine.embed(text)
        assert max(abs(a - b) for a, b in zip(single, vector, strict=True)) < 1e-4
    assert engine.embed_batch([]) == []


def test_related_sentences_are_closer_than_unrelated() -> None:
    engine = get_embedding_engine()
    dog, puppy, tax = engine.embed_batch(["I walked my dog", "my puppy loves walks",
                                          "file the tax return"])

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(dog, puppy) > cosine(dog, tax) + 0.2


def test_engine_is_lazy() -> None:
    engine = EmbeddingEngine()
    assert not engine.is_loaded
