"""Each model's scale of similarity, mapped onto the packaged model's.

The learned ranker's trees read cosines as the packaged MiniLM gives them: unrelated texts
near 0.07, answers mostly above 0.3. Other models put them elsewhere (bge and e5 give
unrelated texts about 0.7). Each other model embeds a fixed set of sentences once, and the
affine map that gives its similarities between them MiniLM's mean and spread moves its
cosines onto MiniLM's scale before the trees and recall's relevance floor read them.
"""

import asyncio
import functools
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from weakref import WeakKeyDictionary

import numpy as np

from app.core.config import PACKAGED_MODEL
from app.embedding.embedder import Embedder
from app.embedding.vectors import Vectors

logger = logging.getLogger(__name__)

REFERENCE_FILE = Path(__file__).with_name("similarity_reference.json")
# Bounds on the map's factor: past them the model's similarities are too flat (or too spread)
# for a mean and a spread to say anything about them.
MIN_FACTOR, MAX_FACTOR = 0.2, 10.0
# How long after a failed measurement (a remote model down) the next search tries again.
RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class SimilarityScale:
    """`shift + factor * cosine`: a model's cosine on the packaged model's scale."""

    shift: float = 0.0
    factor: float = 1.0

    def __call__(self, similarity: float) -> float:
        return self.shift + self.factor * similarity


IDENTITY = SimilarityScale()


@dataclass(frozen=True)
class Reference:
    """The sentences and the packaged model's mean and spread of similarity between them."""

    sentences: list[str | None]
    mean: float
    spread: float


@functools.cache
def reference() -> Reference:
    """The reference shipped with Engram (`similarity_reference.json`), read once."""
    data = json.loads(REFERENCE_FILE.read_text())
    return Reference(data["sentences"], data["mean"], data["spread"])


def pair_statistics(queries: Vectors, documents: Vectors) -> tuple[float, float]:
    """The mean and standard deviation of the similarities of each sentence as a query to
    every other sentence as a document."""
    q, d = np.asarray(queries, dtype=np.float64), np.asarray(documents, dtype=np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    pairs = (q @ d.T)[~np.eye(len(q), dtype=bool)]
    return float(pairs.mean()), float(pairs.std())


def fit(queries: Vectors, documents: Vectors, target: Reference) -> SimilarityScale:
    """The map that gives the model's pair similarities the reference's mean and spread
    (the identity when its similarities are too flat or too spread to read)."""
    mean, spread = pair_statistics(queries, documents)
    factor = target.spread / spread if spread > 0 else 0.0
    if not MIN_FACTOR <= factor <= MAX_FACTOR:
        return IDENTITY
    return SimilarityScale(target.mean - factor * mean, factor)


def is_reference_model(embedder: Embedder) -> bool:
    """Whether the embedder is the packaged model in full precision, whose scale the trees
    were trained on."""
    return (
        embedder.model_name == PACKAGED_MODEL
        and embedder.backend_name in ("onnx", "torch")
        and not embedder.query_prefix
        and not embedder.document_prefix
    )


_measured: "WeakKeyDictionary[Embedder, SimilarityScale]" = WeakKeyDictionary()
# time.monotonic() of a model's last failed measurement; infinite while one runs.
_failed_at: "WeakKeyDictionary[Embedder, float]" = WeakKeyDictionary()
_running: set[asyncio.Task[None]] = set()


def scale_of(embedder: Embedder) -> SimilarityScale:
    """The model's scale: the identity for the packaged model; for another, the map once
    measured, the identity until then (`start` begins the measurement)."""
    if is_reference_model(embedder):
        return IDENTITY
    known = _measured.get(embedder)
    if known is None:
        start(embedder)
        return IDENTITY
    return known


def start(embedder: Embedder) -> None:
    """Measure the model's scale in the background unless it is known, the packaged model,
    being measured, or failed in the last RETRY_SECONDS (needs a running event loop)."""
    if (
        is_reference_model(embedder)
        or embedder in _measured
        or time.monotonic() - _failed_at.get(embedder, -math.inf) < RETRY_SECONDS
    ):
        return
    _failed_at[embedder] = math.inf
    task = asyncio.get_running_loop().create_task(_measure_quietly(embedder))
    _running.add(task)
    task.add_done_callback(_running.discard)


async def measure(embedder: Embedder) -> SimilarityScale:
    """Embed the reference sentences with the model and keep the map they give."""
    sentences = reference().sentences
    queries = await embedder.aembed_batch(sentences, query=True, bulk=True)
    documents = (
        queries
        if embedder.query_prefix == embedder.document_prefix
        else await embedder.aembed_batch(sentences, bulk=True)
    )
    scale = fit(queries, documents, reference())
    _measured[embedder] = scale
    logger.info(
        "similarity scale of %s: %.3f + %.3f x cosine",
        embedder.model_name,
        scale.shift,
        scale.factor,
    )
    return scale


async def _measure_quietly(embedder: Embedder) -> None:
    try:
        await measure(embedder)
    except Exception as error:  # noqa: BLE001 (a model down: searches read raw cosines)
        logger.warning(
            "could not measure the similarity scale of %s (%s); searches read its "
            "raw cosines and try again in %.0f s",
            embedder.model_name,
            error,
            RETRY_SECONDS,
        )
    finally:
        if embedder not in _measured:  # failed, or cancelled with its event loop
            _failed_at[embedder] = time.monotonic()
