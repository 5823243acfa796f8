"""An OpenAI-compatible embeddings endpoint on loopback that serves the packaged MiniLM's
vectors, as they are or changed in one fixed way, to measure search through the remote backend
with models whose vectors differ from MiniLM's in width or scale:

- `plain`: MiniLM's vectors (384 dimensions);
- `lift768`: mapped to 768 dimensions by a fixed matrix with orthonormal columns, so every
  cosine is unchanged;
- `squeeze`: `normalise(v + 1.5 u)` for a fixed unit vector `u`, so that cosines fall between
  about 0.7 and 1, as with bge or e5 models.

With `--int8`, the vectors come from the same graph with int8 weights (the `onnx-int8`
backend) instead of the fp32 one.

    python -m bench.common.minilm_endpoint --transform lift768 --port 8801 &
    ENGRAM_EMBEDDING_BACKEND=openai ENGRAM_EMBEDDING_MODEL=minilm-lift768 \
    ENGRAM_EMBEDDING_BASE_URL=http://127.0.0.1:8801/v1 ENGRAM_EMBEDDING_LANGUAGES=en \
        engram serve --no-auth --port 8802
"""

import argparse
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

from app.embedding import Embedder

SEED = 20261128
SQUEEZE = 1.5


def transform(name: str, dimensions: int = 384) -> Callable[[np.ndarray], np.ndarray]:
    """Rows of unit vectors to the rows the endpoint serves."""
    rng = np.random.default_rng(SEED)
    if name == "plain":
        return lambda rows: rows
    if name == "lift768":
        basis, _ = np.linalg.qr(rng.standard_normal((768, dimensions)))  # orthonormal columns
        return lambda rows: rows @ basis.T
    if name == "squeeze":
        direction = rng.standard_normal(dimensions)
        direction /= np.linalg.norm(direction)

        def squeezed(rows: np.ndarray) -> np.ndarray:
            moved = rows + SQUEEZE * direction
            return moved / np.linalg.norm(moved, axis=1, keepdims=True)

        return squeezed
    raise ValueError(f"unknown transform {name!r}")


def serve(port: int, name: str, *, int8: bool = False) -> ThreadingHTTPServer:
    """Start the endpoint on a thread of its own; the model runs one request at a time."""
    embedder = Embedder(backend="onnx-int8" if int8 else "onnx")
    embedder.load()
    change = transform(name, embedder.dimensions)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            texts = body.get("input") or []
            with lock:
                rows = change(np.asarray(embedder.embed_batch(texts), dtype=np.float32))
            data = [
                {"object": "embedding", "index": i, "embedding": row.tolist()}
                for i, row in enumerate(rows)
            ]
            payload = json.dumps(
                {"object": "list", "model": body.get("model"), "data": data}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transform", choices=("plain", "lift768", "squeeze"), default="plain")
    parser.add_argument(
        "--int8", action="store_true", help="the graph with int8 weights instead of the fp32 one"
    )
    parser.add_argument("--port", type=int, default=8801)
    args = parser.parse_args()
    server = serve(args.port, args.transform, int8=args.int8)
    graph = "int8" if args.int8 else "fp32"
    print(
        f"serving {args.transform} {graph} MiniLM vectors on http://127.0.0.1:{args.port}/v1",
        flush=True,
    )
    threading.Event().wait()
    server.shutdown()


if __name__ == "__main__":
    main()
