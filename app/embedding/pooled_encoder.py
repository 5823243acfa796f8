"""The torch module exported to ONNX: encoder, mean pooling over the mask, L2 norm."""

import torch


class MeanPooledEncoder(torch.nn.Module):
    """The transformer, then the mean of unmasked token states, L2-normalised.

    The same steps as sentence-transformers' Pooling(mean) and Normalize modules.
    """

    def __init__(self, encoder: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        """Sentence vectors of shape (batch, dimensions)."""
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids)[0]
        mask = attention_mask.unsqueeze(-1).to(states.dtype)
        mean = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2, dim=1)
