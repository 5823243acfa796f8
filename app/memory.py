"""Giving freed heap memory back to the operating system after large model calls and bodies."""

import ctypes
import ctypes.util
import os
from functools import cache
from typing import Any

# mallopt(3)'s parameter for the number of malloc arenas.
M_ARENA_MAX = -8
# Where an operator sets glibc's arena count themselves, theirs is kept.
ALLOCATOR_ENVIRONMENT = ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")


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


def share_one_malloc_arena() -> bool:
    """Make threads started from now on allocate from glibc's main arena (`mallopt`);
    False where unavailable or where the environment sets the arena count.

    `malloc_trim` gives back the free top of the main arena only. Each thread that would
    get an arena of its own (the model threads, ONNX Runtime's) kept the top of its heap
    resident after a large batch: tens of MB that no trim returned. The model's speed is
    unchanged with one arena (bench/README.md, "One malloc arena").
    """
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    if any(name in os.environ for name in ALLOCATOR_ENVIRONMENT):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, 1))
