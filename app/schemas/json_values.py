"""Bounded free-form JSON values: client documents the service stores without reading."""

import json
from collections.abc import Callable
from typing import Any

from app.schemas.common import MAX_METADATA_DEPTH

MAX_DOCUMENT_BYTES = 64 * 1024


def _depth(value: Any, depth: int = 0) -> int:
    if isinstance(value, dict):
        return max((_depth(v, depth + 1) for v in value.values()), default=depth + 1)
    if isinstance(value, list):
        return max((_depth(v, depth + 1) for v in value), default=depth + 1)
    return depth


def bounded_json(max_bytes: int = MAX_DOCUMENT_BYTES) -> Callable[[Any], Any]:
    """A validator: the value serialises to at most `max_bytes`, nests at most
    MAX_METADATA_DEPTH levels and holds no NUL character."""

    def check(value: Any) -> Any:
        encoded = json.dumps(value, ensure_ascii=False)
        if len(encoded.encode("utf-8")) > max_bytes:
            raise ValueError(f"must serialise to at most {max_bytes} bytes of JSON")
        if "\\u0000" in encoded:
            raise ValueError("must not contain NUL (\\u0000) characters")
        if _depth(value) > MAX_METADATA_DEPTH:
            raise ValueError(f"must not nest deeper than {MAX_METADATA_DEPTH} levels")
        return value

    return check
