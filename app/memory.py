"""Giving freed heap memory back to the operating system after large model calls and bodies."""

import ctypes
import ctypes.util
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


def release_free_memory() -> bool:
    """Return free heap pages to the OS (glibc `malloc_trim`); False where unavailable.

    ONNX Runtime (with its arena off) and the tokenizer free their buffers after each
    call, but glibc keeps the pages of freed small and mid-sized blocks; without this a
    process stays at the peak of its largest batch.
    """
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True
