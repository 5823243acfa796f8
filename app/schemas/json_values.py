"""Bounded free-form JSON values: client documents the service stores without reading."""

from collections.abc import Callable
from typing import Any

from app.schemas.common import bounded_json as _bounded

MAX_DOCUMENT_BYTES = 64 * 1024


def bounded_json(max_bytes: int = MAX_DOCUMENT_BYTES) -> Callable[[Any], Any]:
    """A validator for a stored client document: `max_bytes` of JSON at most (64 KiB by
    default), nesting and NUL checked as for metadata."""
    return _bounded(max_bytes)
