"""glibc's malloc arenas: threads share the main arena, whose free top malloc_trim returns."""

import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")

# Starts a thread that allocates and holds a block while the main thread counts glibc's
# arenas (the heaps malloc_info(3) lists).
PROBE = """
import ctypes, sys, tempfile, threading
from app.telemetry.heap import share_one_malloc_arena

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = libc.fopen.restype = ctypes.c_void_p
libc.free.argtypes = libc.fclose.argtypes = [ctypes.c_void_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
print(share_one_malloc_arena() if sys.argv[1] == "shared" else "default")
allocated, done = threading.Event(), threading.Event()

def hold():
    block = libc.malloc(4096)
    allocated.set()
    done.wait()
    libc.free(block)

thread = threading.Thread(target=hold)
thread.start()
allocated.wait()
with tempfile.NamedTemporaryFile() as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(out.name).read().count("<heap nr="))
done.set()
thread.join()
"""


def _probe(mode: str, **environment: str) -> list[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("MALLOC_", "GLIBC_TUNABLES"))
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        capture_output=True,
        text=True,
        check=True,
        env={**env, **environment},
    )
    return result.stdout.split()


def test_a_new_thread_allocates_from_the_main_arena() -> None:
    assert _probe("default") == ["default", "2"]
    assert _probe("shared") == ["True", "1"]


def test_an_arena_count_set_in_the_environment_is_kept() -> None:
    assert _probe("shared", MALLOC_ARENA_MAX="4") == ["False", "2"]
