"""Small random sentence-transformers models built on the spot, saved to a directory (no
network): a BERT and a DistilBERT (no token_type_ids), any width, any pooling."""

from pathlib import Path

WORDS = (
    "ann bob carol works lives at in the a harbour bakery school garden on tuesday "
    "monday loves tea coffee dog cat river town ship blue red green and or not is "
    "was will be to of for with from where who what when why how yes no"
).split()


def _tokenizer(folder: Path, kind: str) -> object:
    from transformers import BertTokenizerFast, DistilBertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    # [PAD] not first: the pad token's id comes from the model, not a guess.
    vocab.write_text(
        "\n".join(
            [
                "[UNK]",
                "[CLS]",
                "[SEP]",
                "[PAD]",
                "[MASK]",
                *WORDS,
                *[f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"],
                *"abcdefghijklmnopqrstuvwxyz",
            ]
        )
        + "\n"
    )
    cls = DistilBertTokenizerFast if kind == "distilbert" else BertTokenizerFast
    return cls(vocab_file=str(vocab), do_lower_case=True)


def tiny_model(
    folder: Path,
    *,
    kind: str = "bert",
    hidden: int = 32,
    pooling: str = "mean",
    dense_to: int | None = None,
    max_seq_length: int = 64,
) -> Path:
    """Save a random `kind` ('bert' or 'distilbert') sentence-transformers model of width
    `hidden`, pooled by `pooling`, with a Dense layer to `dense_to` dimensions if given, in
    `folder`; returns the model's directory."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Dense,
        Normalize,
        Pooling,
        Transformer,
    )
    from transformers import BertConfig, BertModel, DistilBertConfig, DistilBertModel

    torch.manual_seed(7)
    tokenizer = _tokenizer(folder / "hf", kind)
    size = len(tokenizer)  # type: ignore[arg-type]
    if kind == "distilbert":
        model = DistilBertModel(
            DistilBertConfig(
                vocab_size=size,
                dim=hidden,
                n_layers=2,
                n_heads=2,
                hidden_dim=hidden * 2,
                max_position_embeddings=128,
                pad_token_id=3,
            )
        )
    else:
        model = BertModel(
            BertConfig(
                vocab_size=size,
                hidden_size=hidden,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=hidden * 2,
                max_position_embeddings=128,
                pad_token_id=3,
            )
        )
    model.save_pretrained(folder / "hf")
    tokenizer.save_pretrained(folder / "hf")  # type: ignore[attr-defined]
    modules = [
        Transformer(str(folder / "hf"), max_seq_length=max_seq_length),
        Pooling(hidden, pooling_mode=pooling),
    ]  # type: ignore[arg-type]
    if dense_to is not None:
        modules.append(Dense(hidden, dense_to))
    modules.append(Normalize())
    target = folder / "model"
    SentenceTransformer(modules=modules, device="cpu").save(str(target))
    return target
