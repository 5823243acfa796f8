"""Model backends: ONNX Runtime on an exported graph (default), sentence-transformers on torch.

Each turns a list of texts into an array of L2-normalised float32 vectors, one row per text.
"""

import json
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from app.embedding import onnx_export
from app.embedding.model_files import set_offline_environment


class Backend(Protocol):
    """Something that encodes texts to normalised vectors."""

    dimensions: int
    max_seq_length: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """One model call: vectors of shape (len(texts), dimensions)."""
        ...


class TorchBackend:
    """sentence-transformers on torch."""

    def __init__(self, *, model_path: str, device: str = "cpu") -> None:
        set_offline_environment()
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(model_path, device=device)
        dimension_of = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        found = dimension_of()
        if found is None:
            raise RuntimeError(f"embedding model {model_path!r} does not state its dimensions")
        self.dimensions = int(found)
        self.max_seq_length = int(self._model.max_seq_length or 512)

    def encode(self, texts: list[str]) -> np.ndarray:
        """One model call through `SentenceTransformer.encode`."""
        vectors: np.ndarray = self._model.encode(
            texts,
            batch_size=max(len(texts), 1),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors


class OnnxBackend:
    """ONNX Runtime on the exported graph, tokenised by the model's fast tokenizer."""

    def __init__(
        self, *, export_dir: Path, threads: int = 2, model_file: str = onnx_export.MODEL_FILE
    ) -> None:
        set_offline_environment()
        import onnxruntime
        from tokenizers import Tokenizer

        meta = json.loads((export_dir / onnx_export.META_FILE).read_text())
        self.dimensions = int(meta["dimensions"])
        self.max_seq_length = int(meta["max_seq_length"])
        self._tokenizer = Tokenizer.from_file(str(export_dir / onnx_export.TOKENIZER_FILE))
        self._tokenizer.enable_truncation(max_length=self.max_seq_length)
        # The export records the model's pad token; older exports leave it to tokenizer.json.
        self._tokenizer.enable_padding(
            pad_id=meta["pad_id"] if meta.get("pad_id") is not None else self._pad_id(),
            pad_token=meta.get("pad_token") or self._pad_token(),
        )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No arena: activations of a large call go back to the allocator when it ends,
        # instead of staying reserved for the life of the process.
        options.enable_cpu_mem_arena = False
        # Idle intra-op threads sleep instead of spinning on the shared cores.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(export_dir / model_file), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {node.name for node in self._session.get_inputs()}

    def _pad_token(self) -> str:
        padding: dict[str, Any] | None = self._tokenizer.padding
        return str(padding["pad_token"]) if padding else "[PAD]"

    def _pad_id(self) -> int:
        padding: dict[str, Any] | None = self._tokenizer.padding
        return int(padding["pad_id"]) if padding else 0

    def encode(self, texts: list[str]) -> np.ndarray:
        """Tokenise (truncated to max_seq_length, padded to the longest) and run the graph."""
        encodings = self._tokenizer.encode_batch(texts)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        del encodings
        outputs = self._session.run(None, {k: v for k, v in feeds.items() if k in self._inputs})
        vectors: np.ndarray = outputs[0]
        return vectors
