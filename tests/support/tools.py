"""Tests that need a program the machine may lack (chromium, chromedriver, pgbouncer, node,
npm) or a framework's packages (installed in a venv of their own): skipped without them,
failed instead under ENGRAM_TESTS_REQUIRE_TOOLS=1 (`.ci/run`), so a green run there never
hides a test that did not run. A pytest plugin: tests/conftest.py loads it."""

import os
import shutil
from typing import NoReturn

import pytest

REQUIRE_TOOLS = "ENGRAM_TESTS_REQUIRE_TOOLS"


def found(program: str) -> str | None:
    """The path of `program`: alternatives joined by `|`, each a name on PATH or a path."""
    for name in program.split("|"):
        path = name if os.path.isabs(name) else shutil.which(name)
        if path is not None and os.access(path, os.X_OK):
            return path
    return None


def needs(*programs: str, install: str = "") -> pytest.MarkDecorator:
    """Mark a test (or a module, as `pytestmark`) that runs `programs`."""
    missing = [program.split("|")[0] for program in programs if found(program) is None]
    if not missing:
        return pytest.mark.needs_tools()
    reason = f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed"
    return pytest.mark.missing_tool(reason + (f" ({install})" if install else ""))


def unavailable(reason: str) -> NoReturn:
    """Skip the test for a missing tool or package, or fail it where every test must run."""
    if os.environ.get(REQUIRE_TOOLS) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_TOOLS}=1 requires every test to run", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config: pytest.Config) -> None:
    """Declare the markers `needs` sets."""
    config.addinivalue_line("markers", "needs_tools: the test's programs are installed")
    config.addinivalue_line("markers", "missing_tool(reason): a program the test runs is missing")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test whose program is missing, or fail it where every test must run."""
    for mark in item.iter_markers("missing_tool"):
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(
                f"{mark.args[0]}, and {REQUIRE_TOOLS}=1 requires every test to run", pytrace=False
            )
        pytest.skip(mark.args[0])
