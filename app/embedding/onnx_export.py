"""Export a sentence-transformers model to one ONNX graph (encoder, its pooling, L2 norm).

Run as `python -m app.embedding.onnx_export <model path> <output dir>`; `ensure_export`
does that in a child process, so the serving process never has to import torch, and
publishes the result with one atomic rename of a temporary directory.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MODEL_FILE = "model.onnx"
INT8_MODEL_FILE = "model.int8.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "export.json"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def ensure_export(*, model_path: str, target: Path) -> Path:
    """Return `target`, exporting the model into it first unless a complete export is there."""
    if (target / META_FILE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _export_in_child(model_path=model_path, output=staging)
        try:
            staging.rename(target)
        except OSError:
            # Another process published first (its export is as good as ours), or something
            # else left an incomplete directory there, which ours replaces.
            if not (target / META_FILE).is_file():
                shutil.rmtree(target)
                staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def ensure_int8(export_dir: Path) -> str:
    """The name of the int8 copy of the export's graph, quantising it first if it is missing.

    onnxruntime's dynamic quantisation (QInt8 weights); written beside the graph under a
    temporary name and renamed into place, so a half-written file is never used.
    """
    target = export_dir / INT8_MODEL_FILE
    if not target.is_file():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        handle, staging = tempfile.mkstemp(prefix=".int8.", suffix=".onnx", dir=export_dir)
        os.close(handle)
        try:
            quantize_dynamic(str(export_dir / MODEL_FILE), staging, weight_type=QuantType.QInt8)
            os.replace(staging, target)
        finally:
            Path(staging).unlink(missing_ok=True)
    return INT8_MODEL_FILE


def _export_in_child(*, model_path: str, output: Path) -> None:
    command = [sys.executable, "-m", "app.embedding.onnx_export", model_path, str(output)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ONNX export of {model_path!r} failed:\n{done.stderr[-4000:]}")


# Modules that may follow the transformer in the exported graph; Normalize adds nothing
# to the final L2 norm, and the others are plain torch on the pooled features.
EXPORTED_HEADS = {"Pooling", "Dense", "Normalize"}
FALLBACK_MAX_SEQ_LENGTH = 512


def export(*, model_path: str, output: Path) -> None:
    """Write model.onnx, tokenizer.json and export.json for `model_path` into `output`."""
    import inspect

    import torch
    from sentence_transformers import SentenceTransformer

    from app.embedding.model_files import set_offline_environment
    from app.embedding.pooled_encoder import PooledEncoder

    set_offline_environment()
    model = SentenceTransformer(model_path, device="cpu")
    modules = list(model)
    transformer: Any = modules[0]
    heads = modules[1:]
    unsupported = [type(m).__name__ for m in heads if type(m).__name__ not in EXPORTED_HEADS]
    if not hasattr(transformer, "auto_model") or unsupported:
        raise RuntimeError(
            f"{model_path!r} is not a transformer followed by {sorted(EXPORTED_HEADS)} "
            f"(found {[type(m).__name__ for m in modules]}): use embedding_backend 'torch'"
        )
    tokenizer = transformer.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise RuntimeError(
            f"{model_path!r} has no fast tokenizer (tokenizer.json): use embedding_backend 'torch'"
        )
    encoder = transformer.auto_model
    takes_types = "token_type_ids" in inspect.signature(encoder.forward).parameters
    names = list(INPUT_NAMES if takes_types else INPUT_NAMES[:2])
    pooled = PooledEncoder(encoder, heads, token_type_ids=takes_types).eval()
    sample = torch.ones(2, 8, dtype=torch.long)
    samples = (sample, sample, torch.zeros_like(sample))[: len(names)]
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    with torch.no_grad():
        torch.onnx.export(
            pooled,
            samples,
            str(output / MODEL_FILE),
            dynamo=False,
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
        )
    tokenizer.backend_tokenizer.save(str(output / TOKENIZER_FILE))
    dimension_of = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )
    meta = {
        "max_seq_length": max_seq_length(model.max_seq_length, tokenizer.model_max_length),
        "dimensions": dimension_of(),
        "pad_token": tokenizer.pad_token,
        "pad_id": tokenizer.pad_token_id,
    }
    # Written last: its presence marks a complete export.
    (output / META_FILE).write_text(json.dumps(meta))


def max_seq_length(model_length: int | None, tokenizer_length: int | None) -> int:
    """The model's stated limit, else the tokenizer's when it states a real one, else 512."""
    for length in (model_length, tokenizer_length):
        if length and length < 1_000_000:
            return int(length)
    return FALLBACK_MAX_SEQ_LENGTH


if __name__ == "__main__":
    export(model_path=sys.argv[1], output=Path(sys.argv[2]))
