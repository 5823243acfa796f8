"""The embedder: a sentence-transformers model on ONNX Runtime (or torch), or a remote
OpenAI-compatible endpoint, shared fairly by tenants."""

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.core.config import PACKAGED_MODEL, EmbeddingBackend, NextModelSettings, Settings
from app.embedding import model_files, onnx_export
from app.embedding.backends import Backend, OnnxBackend, TorchBackend
from app.embedding.chunking import estimated_tokens, plan_chunks
from app.embedding.remote import REMOTE_MAX_SEQ_LENGTH, RemoteBackend, RemoteEndpoint
from app.embedding.scheduler import ChunkEvent, FairScheduler
from app.embedding.vectors import EmbeddingVector, Vectors
from app.telemetry.heap import release_free_memory
from app.telemetry.metrics import MODEL_WAIT_SECONDS

SYSTEM_TENANT = "_system"
DEFAULT_MODELS_DIR = Path("~/.engram/models")
DEFAULT_MAX_SEQ_LENGTH = 256
# Freed heap goes back to the OS once this much work has run since the last time and the
# queue is empty: after a big batch, not after every query (a trim costs 5-200 ms).
TRIM_AFTER_TOKENS = 8192
_EMPTY: EmbeddingVector = np.empty(0, dtype=np.float32)

_embedder: "Embedder | None" = None
_embedder_lock = threading.Lock()


def _default(setting: str) -> Any:
    """The default of `Settings.embedding_<setting>`, so the two cannot drift apart."""
    return Settings.model_fields[f"embedding_{setting}"].default


def _normalise(text: str | None) -> str:
    return text if text else " "


class Embedder:
    """Encodes text to normalised vectors; the model is loaded on first use.

    Async calls go through a `FairScheduler`: `workers` model threads (and `background_workers`
    for a big batch's further chunks, at low CPU priority), tenants served in turn, a
    tenant's searches and single writes before its batches' queued chunks, at most
    `chunk_size` texts and about `chunk_tokens` tokens per model call. The sync calls run on
    the caller's thread.
    """

    def __init__(
        self,
        model_name: str = PACKAGED_MODEL,
        *,
        backend: EmbeddingBackend = "onnx",
        device: str = "cpu",
        dimensions: int | None = None,
        models_dir: Path | None = None,
        remote: RemoteEndpoint | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        write_wait_seconds: float = 5.0,
        max_input_chars: int | None = None,
        chunk_size: int = _default("chunk_size"),
        chunk_tokens: int = _default("chunk_tokens"),
        threads: int = _default("threads"),
        passage_chars: int = _default("passage_chars"),
        passage_overlap: int = _default("passage_overlap"),
        context_turns: int = _default("context_turns"),
        workers: int = _default("workers"),
        background_workers: int = _default("background_workers"),
        languages: frozenset[str] | None = None,
    ) -> None:
        self.model_name = model_name
        self.languages = languages  # what the model knows; None: any language
        if backend == "openai" and remote is not None:
            # One model call is one request: as many texts as the endpoint takes at once.
            chunk_size = remote.batch_size
            chunk_tokens = remote.batch_size * REMOTE_MAX_SEQ_LENGTH
        self.backend_name = backend
        self.device = device
        self._dimensions = dimensions
        self.remote = remote
        # What this store recorded for the model: a remote model that does not answer at
        # load is taken to make vectors of this length.
        self.recorded_dimensions: int | None = None
        # time.monotonic() of the last write stored without vectors (0.0 before any).
        self.deferred_at = 0.0
        self.query_prefix = query_prefix
        # How long a write waits for a remote model before it stores its texts without.
        self.write_wait_seconds = write_wait_seconds
        self.document_prefix = document_prefix
        # A remote model reads at most this many characters of a text (prefix included); the
        # rest is cut here, as a local model's tokenizer cuts past max_seq_length.
        self.max_input_chars = max_input_chars
        self.models_dir = (models_dir or DEFAULT_MODELS_DIR).expanduser()
        self.chunk_size = chunk_size
        self.chunk_tokens = chunk_tokens
        self.threads = threads
        self.passage_chars = passage_chars
        self.passage_overlap = passage_overlap
        self.context_turns = context_turns
        # The model the store switches to, loaded beside this one (embedding_next settings).
        self.next: Embedder | None = None
        # (serving, next) as the last transaction read them: the models a write or query
        # embeds with before its transaction reads which it needs.
        self.slot_hint: tuple[Embedder, Embedder | None] = (self, None)
        self._backend: Backend | None = None
        self._load_lock = threading.Lock()
        self._tokens_since_trim = 0
        self._trim_lock = threading.Lock()
        self._scheduler = FairScheduler(
            self._run_chunk,
            on_idle=self._after_burst,
            max_texts=chunk_size,
            max_tokens=chunk_tokens,
            workers=workers,
            background_workers=background_workers,
            cost=lambda text: estimated_tokens(text, max_seq_length=self.max_seq_length),
        )

    @property
    def model_version(self) -> str:
        """The version recorded in embedding_versions: the same for torch and ONNX, whose
        vectors are equal; int8 vectors are a version of their own."""
        version = (
            "openai-compatible"
            if self.backend_name == "openai"
            else model_files.model_version(self.model_name)
        )
        if self.backend_name == "onnx-int8":
            version += "+int8"
        if self.query_prefix or self.document_prefix:
            prefixes = f"{self.query_prefix}\0{self.document_prefix}".encode()
            version += "+prefix." + hashlib.sha256(prefixes).hexdigest()[:8]
        return version

    @property
    def dimensions(self) -> int:
        """The length of the model's vectors (loads the model when set by no one)."""
        return self._dimensions if self._dimensions is not None else self.load().dimensions

    @property
    def onnx_dir(self) -> Path:
        """Where the ONNX export of this model is cached."""
        return model_files.onnx_cache_dir(models_dir=self.models_dir, model_name=self.model_name)

    @property
    def is_loaded(self) -> bool:
        """True once the model is in memory."""
        return self._backend is not None

    @property
    def failed_recently(self) -> bool:
        """Whether a remote model's last call failed every attempt a few seconds ago, with no
        answer since: writes and searches then go on without it at once."""
        return isinstance(self._backend, RemoteBackend) and self._backend.failed_recently

    @property
    def answered_at(self) -> float:
        """time.monotonic() of a remote model's last good answer (0.0 before any, and for a
        local model)."""
        return self._backend.answered_at if isinstance(self._backend, RemoteBackend) else 0.0

    @property
    def pending_chunks(self) -> int:
        """Model calls queued and not yet started."""
        return self._scheduler.pending_chunks

    @property
    def chunk_record(self) -> list[ChunkEvent]:
        """The latest chunks queued, started and dropped, oldest first."""
        return list(self._scheduler.record)

    def close(self) -> None:
        """Stop the model thread after the queued chunks; async calls are refused after."""
        self._scheduler.close()

    def load(self) -> Backend:
        """Load the model once (thread-safe; exports the ONNX graph if needed) and return it."""
        if self._backend is None:
            with self._load_lock:
                if self._backend is None:
                    self._backend = self._build_backend()
        return self._backend

    def _build_backend(self) -> Backend:
        backend: Backend
        if self.backend_name == "openai":
            if self.remote is None:
                raise RuntimeError("the 'openai' embedding backend needs an endpoint")
            return RemoteBackend(
                self.remote,
                model=self.model_name,
                dimensions=self._dimensions,
                recorded_dimensions=self.recorded_dimensions,
            )
        path = model_files.model_path(self.model_name)
        if self.backend_name == "torch":
            backend = TorchBackend(model_path=path, device=self.device)
        else:
            export_dir = onnx_export.ensure_export(model_path=path, target=self.onnx_dir)
            model_file = (
                onnx_export.ensure_int8(export_dir)
                if self.backend_name == "onnx-int8"
                else onnx_export.MODEL_FILE
            )
            backend = OnnxBackend(
                export_dir=export_dir, threads=self.threads, model_file=model_file
            )
        if self._dimensions is not None and backend.dimensions != self._dimensions:
            raise RuntimeError(
                f"embedding model {self.model_name!r} makes {backend.dimensions}-d vectors, "
                f"embedding_dimensions says {self._dimensions}"
            )
        return backend

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads of a text (the rest is truncated)."""
        if self._backend:
            return self._backend.max_seq_length
        return REMOTE_MAX_SEQ_LENGTH if self.backend_name == "openai" else DEFAULT_MAX_SEQ_LENGTH

    def _plan(self, texts: list[str]) -> list[list[int]]:
        return plan_chunks(
            texts,
            max_texts=self.chunk_size,
            max_tokens=self.chunk_tokens,
            max_seq_length=self.max_seq_length,
        )

    def _run_chunk(self, texts: list[str], live: bool = True) -> Vectors:
        backend = self.load()
        vectors = (
            backend.encode(texts, live=live)
            if isinstance(backend, RemoteBackend)
            else backend.encode(texts)
        )
        work = sum(estimated_tokens(t, max_seq_length=backend.max_seq_length) for t in texts)
        with self._trim_lock:
            self._tokens_since_trim += work
        return list(vectors.astype(np.float32, copy=False))

    def _after_burst(self) -> None:
        """Give freed memory back to the OS if a lot of work ran since the last time."""
        with self._trim_lock:
            due = self._tokens_since_trim >= TRIM_AFTER_TOKENS
            if due:
                self._tokens_since_trim = 0
        if due:
            release_free_memory()

    def _cleaned(self, texts: list[str | None], *, query: bool) -> list[str]:
        """The texts as the model reads them: the query or document prefix, then the text,
        cut to `max_input_chars` when set."""
        prefix = self.query_prefix if query else self.document_prefix
        cleaned = [prefix + _normalise(t) for t in texts]
        if self.max_input_chars is not None:
            cleaned = [text[: self.max_input_chars] for text in cleaned]
        return cleaned

    def embed(self, text: str | None, *, query: bool = True) -> EmbeddingVector:
        """Encode one text (None or empty becomes a single space), a search's query unless
        `query` is off, to a float32 row."""
        return self.embed_batch([text], query=query)[0]

    def embed_batch(self, texts: list[str | None], *, query: bool = False) -> Vectors:
        """Encode many texts (documents unless `query`) on this thread, in bounded model
        calls; [] gives []."""
        cleaned = self._cleaned(texts, query=query)
        vectors: Vectors = [_EMPTY] * len(cleaned)
        for indexes in self._plan(cleaned):
            for index, vector in zip(
                indexes, self._run_chunk([cleaned[i] for i in indexes]), strict=True
            ):
                vectors[index] = vector
        self._after_burst()
        return vectors

    async def aembed(
        self, text: str | None, *, tenant_id: str = SYSTEM_TENANT, query: bool = True
    ) -> EmbeddingVector:
        """`embed` on the model thread, in `tenant_id`'s turn."""
        return (await self.aembed_batch([text], tenant_id=tenant_id, query=query))[0]

    async def aembed_batch(
        self,
        texts: list[str | None],
        *,
        tenant_id: str = SYSTEM_TENANT,
        bulk: bool = False,
        query: bool = False,
        background: bool = False,
    ) -> Vectors:
        """`embed_batch` on the model thread, chunk by chunk in `tenant_id`'s turns; `bulk`
        (a batch of memories, a background job) waits behind the tenant's other calls;
        `background` bulk work (the embedding backlog) never marks a remote model failed
        for live callers.

        If the caller is cancelled (or a chunk fails), its chunks not yet started are dropped.
        """
        started = time.perf_counter()
        cleaned = self._cleaned(texts, query=query)
        plan = self._plan(cleaned)
        futures = self._scheduler.submit(
            tenant_id=tenant_id,
            chunks=[[cleaned[i] for i in indexes] for indexes in plan],
            bulk=bulk,
            background=background,
        )
        vectors: Vectors = [_EMPTY] * len(cleaned)
        try:
            for indexes, future in zip(plan, futures, strict=True):
                for index, vector in zip(indexes, await future, strict=True):
                    vectors[index] = vector
        except BaseException:
            self._scheduler.drop(futures)
            raise
        MODEL_WAIT_SECONDS.observe(time.perf_counter() - started)
        return vectors


def get_embedder(settings: Settings | None = None) -> Embedder:
    """The process-wide embedder (with the model the store switches to as its `next`, when
    the settings name one), created on first call and shared afterwards."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                settings = settings or Settings()
                embedder = build_embedder(settings)
                if settings.embedding_next is not None:
                    embedder.next = build_embedder(settings, next_model=settings.embedding_next)
                _embedder = embedder
    return _embedder


def build_embedder(settings: Settings, *, next_model: NextModelSettings | None = None) -> Embedder:
    """An embedder of the settings' model, or of `next_model` with the other settings."""
    model = next_model
    return Embedder(
        model.model if model else settings.embedding_model,
        backend=model.backend if model else settings.embedding_backend,
        device=settings.embedding_device,
        dimensions=model.dimensions if model else settings.embedding_dimensions,
        remote=remote_endpoint(settings, next_model=model),
        query_prefix=model.query_prefix if model else settings.embedding_query_prefix,
        document_prefix=model.document_prefix if model else settings.embedding_document_prefix,
        write_wait_seconds=settings.embedding_write_wait_seconds,
        max_input_chars=settings.embedding_max_input_chars
        if (model.backend if model else settings.embedding_backend) == "openai"
        else None,
        models_dir=settings.resolved_data_dir / "models",
        chunk_size=settings.embedding_chunk_size,
        chunk_tokens=settings.embedding_chunk_tokens,
        threads=settings.embedding_threads,
        passage_chars=settings.embedding_passage_chars,
        passage_overlap=settings.embedding_passage_overlap,
        context_turns=settings.embedding_context_turns,
        workers=settings.embedding_workers,
        background_workers=settings.embedding_background_workers,
        languages=settings.model_languages if model is None else None,
    )


def remote_endpoint(
    settings: Settings, *, next_model: NextModelSettings | None = None
) -> RemoteEndpoint | None:
    """The embeddings endpoint the settings (or `next_model`) name, if any."""
    base_url = next_model.base_url if next_model else settings.embedding_base_url
    if base_url is None:
        return None
    api_key = next_model.api_key if next_model else settings.embedding_api_key
    return RemoteEndpoint(
        base_url=base_url,
        api_key=api_key.get_secret_value() if api_key is not None else None,
        batch_size=settings.embedding_batch_size,
        timeout_seconds=settings.embedding_timeout_seconds,
        max_attempts=settings.embedding_max_attempts,
    )
