"""Resident memory of the embedder before and after one huge batch (load.py's stall test).

Loads the embedder, warms it up with a few short texts, then embeds N texts of C
characters each (default 500 x 49,000, 24.5 MB) through `aembed_batch`, as the batch
endpoint would, and prints RSS before, at the peak and after (results dropped, gc run).

    python -m bench.speed.embed_memory [--backend onnx|torch] [--texts 500] [--chars 49000]

Run each backend in its own process: RSS never shrinks below what a process has loaded.
"""

import argparse
import asyncio
import gc
import random
import time
from pathlib import Path

from app.embedding import Embedder
from bench.common.texts import sentence


def status_mb(field: str) -> float:
    """A /proc/self/status memory field (VmRSS, VmHWM) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def huge_texts(count: int, chars: int, seed: int) -> list[str]:
    """`count` distinct texts of exactly `chars` characters of generated sentences."""
    rng = random.Random(seed)
    texts = []
    for index in range(count):
        parts = [f"turn {index}:"]
        size = len(parts[0])
        while size < chars:
            parts.append(sentence(rng))
            size += len(parts[-1]) + 1
        texts.append(" ".join(parts)[:chars])
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["onnx", "torch"], default="onnx")
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--chars", type=int, default=49_000)
    parser.add_argument("--chunk-size", type=int, default=32)
    args = parser.parse_args()

    embedder = Embedder(backend=args.backend, chunk_size=args.chunk_size)
    embedder.load()
    embedder.embed_batch(["warm up", "a second short text", "and a third one"])
    texts = huge_texts(args.texts, args.chars, seed=7)
    gc.collect()
    before = status_mb("VmRSS")
    start = time.perf_counter()
    vectors = asyncio.run(embedder.aembed_batch(texts, tenant_id="H"))
    seconds = time.perf_counter() - start
    assert len(vectors) == len(texts)
    del vectors
    gc.collect()
    after = status_mb("VmRSS")
    print(
        f"{args.backend}: {args.texts} x {args.chars:,} chars in {seconds:.1f} s "
        f"({args.texts / seconds:.0f}/s); RSS before {before:.0f} MB, peak "
        f"{status_mb('VmHWM'):.0f} MB, after {after:.0f} MB "
        f"({(after - before) / before:+.1%})"
    )


if __name__ == "__main__":
    main()
