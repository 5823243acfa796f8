"""The embedding model: backends (local and remote), the ONNX export, the fair scheduler and
the Embedder."""

from app.embedding.embedder import SYSTEM_TENANT, Embedder, get_embedder

__all__ = ["SYSTEM_TENANT", "Embedder", "get_embedder"]
