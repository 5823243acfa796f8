"""Build the engram-memory-client distribution (clients/python) and install its wheel in a
venv of its own, as a developer without the server does: shared by its test and its bench script."""

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.paths import PYTHON_CLIENT, REPO_ROOT
from tests.support.tools import unavailable

# What the server needs and the client must not bring.
SERVER_ONLY = ("torch", "sqlalchemy", "asyncpg", "onnxruntime", "mcp", "fastapi")
# The installs below may fetch httpx and pydantic from the package index.
INSTALL_SECONDS = 600


@dataclass(frozen=True)
class ClientVenv:
    """A venv holding only the engram-memory-client wheel and its dependencies."""

    root: Path
    wheel: Path
    install_seconds: float

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def script(self, name: str) -> Path:
        """A console script the venv installed."""
        return self.root / "bin" / name

    def env(self, **extra: str) -> dict[str, str]:
        """An environment that sees the venv's packages only (no checkout on PYTHONPATH)."""
        return {**outside(), "PATH": f"{self.root / 'bin'}:/usr/bin:/bin", **extra}

    def run(self, *args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
        """A command of the venv (its python when the first word is `python`)."""
        command = [str(self.python if args[0] == "python" else self.script(args[0])), *args[1:]]
        return subprocess.run(
            command, cwd=cwd, env=self.env(**extra), capture_output=True, text=True, timeout=300
        )


def outside() -> dict[str, str]:
    """This process's environment without the paths that would show the checkout's packages
    (and their metadata) to another interpreter."""
    hidden = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {name: value for name, value in os.environ.items() if name not in hidden}


def build(into: Path) -> tuple[Path, Path]:
    """The client's wheel (`pip wheel`) and sdist (setuptools' PEP 517 hook, what `python -m
    build --sdist` calls), built from the checkout without download."""
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["--wheel-dir", str(into), str(PYTHON_CLIENT)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, setuptools.build_meta as backend\nprint(backend.build_sdist(sys.argv[1]))",
            str(into),
        ],
        cwd=PYTHON_CLIENT,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    [wheel] = into.glob("engram_memory_client-*.whl")
    [sdist] = into.glob("engram_memory_client-*.tar.gz")
    return wheel, sdist


def install(
    wheel: Path, root: Path, extra: str | None = None, packages: tuple[str, ...] = ()
) -> ClientVenv:
    """A new venv at `root` with the wheel installed (with `extra`, its packages too) and
    `packages`; the install's time is pip's alone."""
    subprocess.run(
        [sys.executable, "-m", "venv", str(root)], env=outside(), check=True, timeout=300
    )
    requirement = f"engram-memory-client[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
    started = time.monotonic()
    subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", requirement, *packages],
        env=outside(),
        check=True,
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
    )
    return ClientVenv(root, wheel, time.monotonic() - started)


def installed(venv: ClientVenv) -> set[str]:
    """The names of the distributions in the venv, lower case."""
    listed = venv.run("python", "-m", "pip", "list", "--format=freeze", cwd=venv.root)
    return {line.split("==")[0].lower() for line in listed.stdout.split()}


def import_seconds(venv: ClientVenv, runs: int = 3) -> float:
    """The median, over `runs` fresh interpreters, of the time `from engram_client import
    EngramClient` takes (the package and its client, httpx and pydantic with them)."""
    probe = (
        "import time\nstarted = time.perf_counter()\nfrom engram_client import EngramClient\n"
        "print(time.perf_counter() - started)"
    )
    return statistics.median(
        float(venv.run("python", "-c", probe, cwd=venv.root).stdout) for _ in range(runs)
    )


def size_bytes(root: Path) -> int:
    """The bytes of the files under `root`."""
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


def framework_venv(root: Path, extra: str, packages: tuple[str, ...] = ()) -> ClientVenv:
    """A venv with the client's wheel and its `extra` (and `packages`); when they cannot be
    installed the test is skipped (failed under ENGRAM_TESTS_REQUIRE_TOOLS=1)."""
    wheel, _ = build(root / "dist")
    try:
        venv = install(wheel, root / "venv", extra, packages)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        unavailable(f"engram-memory-client[{extra}] could not be installed: {error.stderr}")
    print(
        f"\nengram-memory-client[{extra}]: pip install {venv.install_seconds:.1f} s, "
        f"{size_bytes(venv.root) / 1e6:.0f} MB"
    )
    return venv


def run_script(venv: ClientVenv, name: str, *args: str, **env: str) -> Any:
    """What the script tests/support/frameworks/`name`.py, run by the venv's python with
    `args`, printed as its last line of JSON."""
    script = REPO_ROOT / "tests" / "support" / "frameworks" / f"{name}.py"
    done = venv.run("python", str(script), *args, cwd=venv.root, **env)
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
