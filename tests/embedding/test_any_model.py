"""Any sentence-transformers model in a directory runs on both local backends: the ONNX
export keeps the model's pooling, dense layers, inputs and width."""

from pathlib import Path

import numpy as np
import pytest

from app.embedding import Embedder
from tests.support.tiny_models import tiny_model

# Of different lengths, so one call pads most of them.
TEXTS = [
    "ann",
    "bob works at the bakery on tuesday",
    "carol lives in the town by the river and loves tea with a cat and a dog",
    "where does ann work",
    "yes",
]

VARIANTS = {
    "bert-mean-32": {"kind": "bert", "hidden": 32, "pooling": "mean"},
    "bert-cls-dense-48": {"kind": "bert", "hidden": 32, "pooling": "cls", "dense_to": 48},
    "distilbert-lasttoken-16": {"kind": "distilbert", "hidden": 16, "pooling": "lasttoken"},
}


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def model(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, int]:
    """A tiny model's directory and the width of its vectors."""
    options = VARIANTS[request.param]
    folder = tiny_model(tmp_path_factory.mktemp(request.param), **options)  # type: ignore[arg-type]
    return folder, int(options.get("dense_to") or options["hidden"])  # type: ignore[call-overload]


def test_onnx_and_torch_give_the_same_unit_vectors_of_the_models_width(
    model: tuple[Path, int], tmp_path: Path
) -> None:
    folder, width = model
    onnx = Embedder(str(folder), backend="onnx", models_dir=tmp_path)
    torch = Embedder(str(folder), backend="torch")
    assert onnx.dimensions == torch.dimensions == width
    onnx_vectors = np.asarray(onnx.embed_batch(list(TEXTS)))
    torch_vectors = np.asarray(torch.embed_batch(list(TEXTS)))
    assert onnx_vectors.shape == (len(TEXTS), width)
    assert np.linalg.norm(onnx_vectors, axis=1) == pytest.approx(1.0, abs=1e-5)
    assert (onnx_vectors * torch_vectors).sum(axis=1).min() >= 0.9999
    # One text alone (no padding) gives the vector it had in the padded batch.
    alone = onnx.embed(TEXTS[1], query=False)
    assert float(alone @ onnx_vectors[1]) >= 0.9999


def test_a_dimension_that_is_not_the_models_is_refused(
    model: tuple[Path, int], tmp_path: Path
) -> None:
    folder, width = model
    embedder = Embedder(str(folder), backend="torch", dimensions=width + 1)
    with pytest.raises(RuntimeError, match=f"makes {width}-d vectors"):
        embedder.load()
