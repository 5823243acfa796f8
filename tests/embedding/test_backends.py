"""The ONNX Runtime backend against sentence-transformers on torch, and its cached export."""

from pathlib import Path

import numpy as np
import pytest

from app.embedding import Embedder, get_embedder, onnx_export
from tests.embedding.samples import SAMPLE_TEXTS


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    """sentence-transformers on torch, the reference."""
    embedder = Embedder(backend="torch")
    embedder.load()
    return embedder


def _cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    left, right = np.asarray(a), np.asarray(b)
    return (left * right).sum(axis=1) / (
        np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1))


def test_onnx_is_the_default_backend() -> None:
    assert get_embedder().backend_name == "onnx"


def test_onnx_vectors_equal_torch_vectors(torch_embedder: Embedder) -> None:
    onnx_vectors = get_embedder().embed_batch(list(SAMPLE_TEXTS))
    torch_vectors = torch_embedder.embed_batch(list(SAMPLE_TEXTS))
    assert _cosines(onnx_vectors, torch_vectors).min() >= 0.9999


def test_onnx_vectors_equal_torch_vectors_one_text_at_a_time(torch_embedder: Embedder) -> None:
    onnx_vectors = [get_embedder().embed(text) for text in SAMPLE_TEXTS]
    torch_vectors = [torch_embedder.embed(text) for text in SAMPLE_TEXTS]
    assert _cosines(onnx_vectors, torch_vectors).min() >= 0.9999


def test_onnx_truncates_at_the_models_max_seq_length() -> None:
    embedder = get_embedder()
    prefix = "word " * 300
    assert embedder.embed(prefix) == pytest.approx(embedder.embed(prefix + " different tail"),
                                                   abs=1e-6)


def test_both_backends_record_the_same_model_version(torch_embedder: Embedder) -> None:
    assert torch_embedder.model_version == get_embedder().model_version


def test_onnx_export_is_cached_and_reused(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    first = Embedder(models_dir=tmp_path)
    first.load()
    model_file = first.onnx_dir / onnx_export.MODEL_FILE
    assert model_file.is_file()
    before = model_file.stat()
    leftovers = [p for p in tmp_path.iterdir() if p != first.onnx_dir]
    assert leftovers == []  # the staging directory was renamed into place

    def no_export(**_: object) -> None:
        raise AssertionError("the cached export should have been reused")

    monkeypatch.setattr(onnx_export, "_export_in_child", no_export)
    second = Embedder(models_dir=tmp_path)
    second.load()
    after = model_file.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert second.embed("cached") == pytest.approx(first.embed("cached"), abs=1e-6)


def test_an_incomplete_export_directory_is_replaced(tmp_path: Path) -> None:
    embedder = Embedder(models_dir=tmp_path)
    embedder.onnx_dir.mkdir(parents=True)
    (embedder.onnx_dir / onnx_export.MODEL_FILE).write_bytes(b"half a file")
    embedder.load()
    assert (embedder.onnx_dir / onnx_export.META_FILE).is_file()
    assert len(embedder.embed("complete again")) == 384
