"""The TypeScript client (clients/typescript): its Node tests against a live Engram, and its
generated types against openapi/openapi.json."""

import asyncio
import difflib
import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from app.core.config import JobSettings, LimitSettings
from tests.support.paths import REPO_ROOT
from tests.support.readme import CLIENTS, examples
from tests.support.tools import needs

PACKAGE = REPO_ROOT / "clients" / "typescript"
GENERATED = PACKAGE / "src" / "generated" / "openapi.ts"
# Written into node_modules after `npm ci`: the package-lock.json it installed.
INSTALLED_LOCK = PACKAGE / "node_modules" / ".installed-lock-sha256"

pytestmark = needs("node", "npm", install="Debian: apt-get install nodejs npm")


def _run(*command: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a command in the package directory; its output joined when it fails."""
    result = subprocess.run(
        command,
        cwd=PACKAGE,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}",
            pytrace=False,
        )
    return result


@pytest.fixture(scope="module")
def installed() -> Path:
    """node_modules as package-lock.json pins it (`npm ci` only when missing or stale)."""
    lock = hashlib.sha256((PACKAGE / "package-lock.json").read_bytes()).hexdigest()
    if not INSTALLED_LOCK.exists() or INSTALLED_LOCK.read_text() != lock:
        _run("npm", "ci", "--no-audit", "--no-fund")
        INSTALLED_LOCK.write_text(lock)
    return PACKAGE


@pytest.fixture(scope="module")
def compiled(installed: Path) -> list[str]:
    """The client and its tests compiled by the pinned TypeScript; the test files."""
    _run("npx", "--no-install", "tsc", "-p", ".")
    return sorted(
        str(path.relative_to(PACKAGE)) for path in (PACKAGE / "dist" / "test").glob("*.test.js")
    )


@pytest.fixture
def worker_url(serve: Callable[..., str]) -> str:
    """A live server with authentication on and a worker running queued jobs."""
    return serve(
        jobs=JobSettings(worker_enabled=True, scheduler_enabled=False, poll_interval_seconds=0.1)
    )


@pytest.fixture
def throttled_url(serve: Callable[..., str]) -> str:
    """A second live server that allows 5 requests a second per key after a burst of 5."""
    return serve(limits=LimitSettings(requests_per_second=5, burst=5))


async def test_the_node_tests_pass_against_a_live_server(
    compiled, worker_url, throttled_url, api_key_for
):
    key = await api_key_for("typescript-client")
    assert compiled, "no compiled Node tests found in dist/test"
    await asyncio.to_thread(
        _run,
        "node",
        "--test",
        "--test-reporter=spec",
        *compiled,
        ENGRAM_URL=worker_url,
        ENGRAM_API_KEY=key,
        ENGRAM_THROTTLED_URL=throttled_url,
    )


def test_the_checked_in_types_match_the_openapi_document(installed, tmp_path):
    regenerated = tmp_path / "openapi.ts"
    _run("node", "scripts/generate-types.mjs", str(regenerated))
    expected, actual = GENERATED.read_text(), regenerated.read_text()
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(True), actual.splitlines(True), "checked in", "regenerated", n=1
        )
    )
    assert expected == actual, (
        "clients/typescript/src/generated/openapi.ts is out of date; "
        f"run `npm run generate` there:\n{diff[:4000]}"
    )


async def test_the_documented_example_runs_as_written(
    installed, compiled, worker_url, api_key_for, tmp_path
):
    [example] = examples("TypeScript", "ts", CLIENTS)
    project = tmp_path / "project"
    (project / "node_modules").mkdir(parents=True)
    (project / "node_modules" / "engram-client").symlink_to(PACKAGE)
    (project / "example.mjs").write_text(example)
    key = await api_key_for("typescript-readme")
    result = await asyncio.to_thread(
        subprocess.run,
        ["node", "example.mjs"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ENGRAM_URL": worker_url, "ENGRAM_API_KEY": key},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Ann lives in Lyon."
