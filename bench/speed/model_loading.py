"""The model loaded at start-up (Engram) against on first use: start-up time and the first
search's latency, each way.

Starts the service in a child process on an embedded database in a scratch directory (the
exported model is shared), times start-up to the first 200 of `/healthz` (the app is
serving), notes what `/readyz` says then, and times the first two searches. "first-use" is
the same service with the start-up's `Embedder.load` skipped, so the first request that
embeds loads the model. One run first
creates the database and is not counted. Prints one row per run.

    python -m bench.speed.model_loading --runs 3
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from app.core.config import Settings

CHILD = """
import sys
import uvicorn
from app.core.config import Settings
from app.main import create_app
if sys.argv[1] == "first-use":
    from app.embedding.embedder import Embedder
    real_load, skipped = Embedder.load, []

    def load(self):
        if not skipped:  # the start-up's call; the first embedding loads it
            skipped.append(True)
            return None
        return real_load(self)

    Embedder.load = load
uvicorn.run(create_app(Settings()), host="127.0.0.1", port=int(sys.argv[2]),
            log_level="warning")
"""
QUERIES = ("Where does Ann live now?", "Who moved to Lyon last spring?")


def wait_for(url: str, process: subprocess.Popen[bytes], started: float) -> float:
    """Seconds from `started` until `url` answers 200."""
    while True:
        assert process.poll() is None, "the service exited"
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return time.perf_counter() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.05)


def one_run(mode: str, data_dir: Path, port: int) -> tuple[float, int, float, float]:
    """(s to the first 200 of /healthz, /readyz's status then, first search ms, second
    search ms) of one start."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "ENGRAM_DATABASE_URL")
    }
    env.update(
        ENGRAM_DATA_DIR=str(data_dir),
        ENGRAM_CONFIG=str(data_dir / "none.toml"),
        ENGRAM_AUTH_DISABLED="true",
        ENGRAM_JOBS__WORKER_ENABLED="false",
        ENGRAM_JOBS__SCHEDULER_ENABLED="false",
    )
    base = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(port)], env=env)
    try:
        alive = wait_for(f"{base}/healthz", process, started)
        ready = httpx.get(f"{base}/readyz", timeout=5).status_code
        times = []
        for query in QUERIES:
            begun = time.perf_counter()
            answer = httpx.post(f"{base}/v1/search", json={"query": query}, timeout=120)
            times.append((time.perf_counter() - begun) * 1000)
            assert answer.status_code == 200, answer.text
        return alive, ready, times[0], times[1]
    finally:
        process.terminate()
        process.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each mode")
    parser.add_argument("--port", type=int, default=18779)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        models = Settings().resolved_data_dir / "models"
        if models.exists():
            (data_dir / "models").symlink_to(models)
        one_run("start-up", data_dir, args.port)  # creates the database
        print(
            "| model loaded | run | serving after s | /readyz then | "
            "first search ms | second search ms |"
        )
        print("|---|---|---|---|---|---|")
        for run in range(1, args.runs + 1):
            for mode in ("start-up", "first-use"):
                alive, ready, first, second = one_run(mode, data_dir, args.port)
                print(
                    f"| {mode} | {run} | {alive:.1f} | {ready} | {first:.0f} | {second:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
