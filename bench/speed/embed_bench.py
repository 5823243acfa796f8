"""Speed of the embedding model alone: torch vs ONNX Runtime (and int8, for information).

For each backend: sentences/s in model calls as the Embedder cuts a batch (longest
first, 32 texts, about 2048 tokens), and per-query latency of one-text calls (median,
p95), on short texts (<= 200 characters, the common/texts.py generator) and on long chat turns
(LongMemEval_S dev turns when the file is there, else generated ones). Also the minimum
and mean cosine of each backend's vectors against torch's.

    python -m bench.speed.embed_bench \
        [--longmemeval /work/shared/data/longmemeval/longmemeval_s_dev.json.gz]

No server needed. int8 is the `onnx-int8` backend: onnxruntime's dynamic quantisation of
the exported graph (see bench/quality/int8_recall.py for what it costs in recall).
"""

import argparse
import gzip
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np

from app.embedding import Embedder
from app.embedding.backends import Backend
from app.embedding.chunking import plan_chunks
from bench.common.texts import question, sentence

DEFAULT_LONGMEMEVAL = Path("/work/shared/data/longmemeval/longmemeval_s_dev.json.gz")


def short_texts(n: int, seed: int) -> list[str]:
    """Generated episode sentences, all <= 200 characters."""
    rng = random.Random(seed)
    return [s for s in (sentence(rng) for _ in range(n * 2)) if len(s) <= 200][:n]


def long_turns(n: int, seed: int, path: Path | None) -> list[str]:
    """Chat turns of LongMemEval_S (user and assistant), or generated paragraphs."""
    rng = random.Random(seed)
    if path is not None and path.is_file():
        data = json.loads(gzip.decompress(path.read_bytes()))
        turns = sorted({t["content"] for q in data for s in q["haystack_sessions"] for t in s})
        return rng.sample(turns, n)
    return [" ".join(sentence(rng) for _ in range(rng.randint(3, 40))) for _ in range(n)]


def encode_all(backend: Backend, texts: list[str]) -> np.ndarray:
    """Vectors of `texts` in the service's model calls (32 texts, about 2048 tokens)."""
    vectors = np.zeros((len(texts), backend.dimensions), dtype=np.float32)
    for indexes in plan_chunks(
        texts, max_texts=32, max_tokens=2048, max_seq_length=backend.max_seq_length
    ):
        vectors[indexes] = backend.encode([texts[i] for i in indexes])
    return vectors


def throughput(backend: Backend, texts: list[str]) -> float:
    """Texts per second through encode_all (after one warm-up call)."""
    backend.encode(texts[:32])
    start = time.perf_counter()
    encode_all(backend, texts)
    return len(texts) / (time.perf_counter() - start)


def latency(backend: Backend, texts: list[str]) -> tuple[float, float]:
    """Median and p95 in ms of one-text calls over `texts` (after 10 warm-ups)."""
    for text in texts[:10]:
        backend.encode([text])
    samples = []
    for text in texts:
        start = time.perf_counter()
        backend.encode([text])
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def cosines(vectors: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """Minimum and mean cosine between matching rows (all rows are unit vectors)."""
    values = (vectors * reference).sum(axis=1)
    return float(values.min()), float(values.mean())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-texts", type=int, default=1000, help="texts per throughput run")
    parser.add_argument("--queries", type=int, default=200, help="texts per latency run")
    parser.add_argument("--longmemeval", type=Path, default=DEFAULT_LONGMEMEVAL)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    qrng = random.Random(args.seed)
    queries = [question(qrng, i) for i in range(args.queries)]
    short = short_texts(args.batch_texts, args.seed)
    long = long_turns(args.batch_texts, args.seed, args.longmemeval)
    long_queries = long[: args.queries]
    print(
        f"short texts: {len(short)}, mean {statistics.fmean(map(len, short)):.0f} chars; "
        f"long turns: {len(long)}, median {statistics.median(map(len, long)):.0f} chars "
        f"({'LongMemEval_S dev' if args.longmemeval.is_file() else 'generated'})"
    )

    torch_backend = Embedder(backend="torch").load()
    backends = {
        "torch": torch_backend,
        "onnx": Embedder().load(),
        "onnx int8": Embedder(backend="onnx-int8").load(),
    }
    reference = {"short": encode_all(torch_backend, short), "long": encode_all(torch_backend, long)}
    print(
        "| backend | texts | sentences/s (batches of 32) | query median / p95 | "
        "cosine vs torch min / mean |"
    )
    print("|---|---|---|---|---|")
    for name, backend in backends.items():
        for label, texts, singles in (("short", short, queries), ("long", long, long_queries)):
            rate = throughput(backend, texts)
            median, p95 = latency(backend, singles)
            low, mean = cosines(encode_all(backend, texts), reference[label])
            print(
                f"| {name} | {label} | {rate:.0f} | {median:.1f} / {p95:.1f} ms | "
                f"{low:.4f} / {mean:.4f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
