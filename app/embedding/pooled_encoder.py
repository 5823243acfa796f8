"""The torch module exported to ONNX: the encoder, the model's own pooling (and any dense
layers after it), then an L2 norm."""

from collections.abc import Sequence
from typing import Any

import torch


class PooledEncoder(torch.nn.Module):
    """The transformer, then the sentence-transformers modules that follow it (Pooling in
    whatever mode the model was trained with: mean, CLS, max, last token...; Dense;
    Normalize), then an L2 norm, so every backend gives unit vectors."""

    def __init__(
        self, encoder: torch.nn.Module, heads: Sequence[torch.nn.Module], *, token_type_ids: bool
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.heads = torch.nn.ModuleList(heads)
        self.token_type_ids = token_type_ids

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, *token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """Sentence vectors of shape (batch, dimensions)."""
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if self.token_type_ids:
            inputs["token_type_ids"] = token_type_ids[0]
        states = self.encoder(**inputs)[0]
        features: dict[str, Any] = {"token_embeddings": states, "attention_mask": attention_mask}
        for head in self.heads:
            features = head(features)
        return torch.nn.functional.normalize(features["sentence_embedding"], p=2, dim=1)
