"""A test that needs a program the machine lacks (or a package that cannot be installed) is
skipped, except where CI says every test must run (ENGRAM_TESTS_REQUIRE_TOOLS=1): there it
fails, so a green run never hides a test that did not run."""

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO_ROOT

TEST = """
import pytest
from tests.support.tools import needs, unavailable

@pytest.fixture
def uninstallable_package():
    unavailable("no-such-package could not be installed")

@needs("no-such-program-anywhere")
def test_uses_the_program():
    pass

@needs("sh")
def test_uses_a_present_program():
    pass

def test_uses_the_package(uninstallable_package):
    pass
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "test_tool.py"
    path.write_text(TEST)
    environment = {
        name: value for name, value in os.environ.items() if name != "ENGRAM_TESTS_REQUIRE_TOOLS"
    }
    environment.update(PYTHONPATH=str(REPO_ROOT), **env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.support.tools",
            str(path),
        ],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_program_skips_the_test(tmp_path: Path) -> None:
    result = _run(tmp_path)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 2 skipped" in result.stdout
    assert "no-such-program-anywhere is not installed" in result.stdout
    assert "no-such-package could not be installed" in result.stdout


def test_a_missing_program_fails_the_test_where_every_test_must_run(tmp_path: Path) -> None:
    result = _run(tmp_path, ENGRAM_TESTS_REQUIRE_TOOLS="1")
    assert result.returncode == 1, result.stdout
    assert "1 passed, 2 errors" in result.stdout
    assert "ENGRAM_TESTS_REQUIRE_TOOLS" in result.stdout
