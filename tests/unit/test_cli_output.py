"""The `engram` command's output conventions that scripts rely on."""

import subprocess
import sys
from importlib.metadata import version


def test_version_prints_the_installed_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == f"engram {version('engram')}"


def test_refused_start_is_one_line_on_stderr_and_a_failing_exit() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--no-auth", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("engram: refused to start: authentication is disabled")
    assert "Traceback" not in result.stderr
