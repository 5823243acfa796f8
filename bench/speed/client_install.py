"""The engram-memory-client distribution alone: its wheel's size, how long `pip install` of
the wheel takes in a new venv (dependencies from the package index), the venv's size, and how long
`from engram_client import EngramClient` and the hook modules take to import there (the
median of fresh interpreters). Aim: the client imports in under 0.3 s.

    python -m bench.speed.client_install --runs 5
"""

import argparse
import statistics
import tempfile
from pathlib import Path

from tests.support.client_wheel import build, import_seconds, install, installed, size_bytes

HOOK_PROBE = (
    "import time\nstarted = time.perf_counter()\nimport engram_client.hooks.claude_code\n"
    "print(time.perf_counter() - started)"
)


def main() -> None:
    """Build, install, measure, print one line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per import")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="engram-client-bench-") as scratch:
        root = Path(scratch)
        wheel, sdist = build(root / "dist")
        venv = install(wheel, root / "venv")
        hooks = statistics.median(
            float(venv.run("python", "-c", HOOK_PROBE, cwd=root).stdout) for _ in range(args.runs)
        )
        print(f"wheel            {wheel.stat().st_size / 1000:8.0f} kB")
        print(f"sdist            {sdist.stat().st_size / 1000:8.0f} kB")
        print(f"pip install      {venv.install_seconds:8.1f} s")
        print(f"venv size        {size_bytes(venv.root) / 1e6:8.1f} MB")
        print(f"distributions    {len(installed(venv)):8d}  {' '.join(sorted(installed(venv)))}")
        print(f"import client    {import_seconds(venv, args.runs) * 1000:8.0f} ms (median)")
        print(f"import hooks     {hooks * 1000:8.0f} ms (median)")


if __name__ == "__main__":
    main()
