"""The code is formatted by `ruff format` and passes `ruff check`, as docs/development.md says."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.parametrize("command", [["format", "--check"], ["check"]], ids=["format", "lint"])
def test_ruff_finds_nothing_to_change(command):
    result = subprocess.run(
        [str(RUFF), *command, "."], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
