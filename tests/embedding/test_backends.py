"""The ONNX Runtime backend against sentence-transformers on torch, and its cached export."""

import shutil
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
        np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    )


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
    assert embedder.embed(prefix) == pytest.approx(
        embedder.embed(prefix + " different tail"), abs=1e-6
    )


def test_both_backends_record_the_same_model_version(torch_embedder: Embedder) -> None:
    assert torch_embedder.model_version == get_embedder().model_version


def test_onnx_export_is_cached_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


@pytest.fixture(scope="module")
def int8_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The int8 graph, quantised from a copy of the shared export (so the test owns it)."""
    models_dir = tmp_path_factory.mktemp("models")
    shared = get_embedder()
    shared.load()
    embedder = Embedder(backend="onnx-int8", models_dir=models_dir)
    shutil.copytree(
        shared.onnx_dir,
        embedder.onnx_dir,
        ignore=shutil.ignore_patterns(onnx_export.INT8_MODEL_FILE),
    )
    embedder.load()
    return embedder


def test_int8_vectors_keep_each_text_nearest_its_full_precision_vector(
    int8_embedder: Embedder,
) -> None:
    int8 = np.asarray(int8_embedder.embed_batch(list(SAMPLE_TEXTS)))
    full = np.asarray(get_embedder().embed_batch(list(SAMPLE_TEXTS)))
    nearest = (int8 @ full.T).argmax(axis=1)
    assert list(nearest) == list(range(len(SAMPLE_TEXTS)))
    assert _cosines(int8.tolist(), full.tolist()).mean() >= 0.9


def test_int8_vectors_are_a_model_version_of_their_own(int8_embedder: Embedder) -> None:
    assert int8_embedder.model_version == get_embedder().model_version + "+int8"


def test_the_int8_graph_is_quantised_once_and_reused(
    int8_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = int8_embedder.onnx_dir / onnx_export.INT8_MODEL_FILE
    before = graph.stat()

    def no_quantisation(*_: object, **__: object) -> None:
        raise AssertionError("the int8 graph should have been reused")

    monkeypatch.setattr("onnxruntime.quantization.quantize_dynamic", no_quantisation)
    again = Embedder(backend="onnx-int8", models_dir=int8_embedder.models_dir)
    again.load()
    after = graph.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert again.embed("reused") == pytest.approx(int8_embedder.embed("reused"), abs=1e-6)
    assert sorted(p.name for p in graph.parent.iterdir() if p.name.startswith(".")) == []
