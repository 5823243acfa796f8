"""Giving freed heap memory back to the operating system after large model calls and bodies."""

import asyncio
import ctypes
import ctypes.util
import os
import time
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


_next_release_at = 0.0


def release_free_memory_later(delay_seconds: float) -> bool:
    """Trim once more `delay_seconds` from now, in a worker thread of the running loop;
    False when a trim is already due by then."""
    global _next_release_at
    now = time.monotonic()
    if _next_release_at > now:
        return False
    _next_release_at = now + delay_seconds
    loop = asyncio.get_running_loop()
    loop.call_later(delay_seconds, loop.run_in_executor, None, release_free_memory)
    return True


def share_one_malloc_arena() -> bool:
    """Make threads that first allocate from now on use glibc's main arena (`mallopt`);
    False where unavailable or where the environment sets the arena count.

    `malloc_trim` gives back the free top of the main arena only. The threads that run the
    model (the embedding thread, ONNX Runtime's) each had an arena of their own, whose free
    top stayed resident after a large batch: 21 MB after 150 texts of 49,000 characters.
    The model runs as fast with one arena (bench/journal/2026-11.md, "What stays after a big
    batch, and one malloc arena").
    """
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    if any(name in os.environ for name in ALLOCATOR_ENVIRONMENT):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, 1))
