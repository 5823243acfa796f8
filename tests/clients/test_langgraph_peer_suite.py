"""LangGraph's own store tests (its SQLite store's, sync and async) run against a live Engram
through EngramStore, with the default rate limit.

Opt-in: set LANGGRAPH_REPO to a checkout of github.com/langchain-ai/langgraph. The tests are
copied to a temporary directory with their store fixtures pointed at EngramStore
(tests/support/langgraph_peer_conftest.py); nothing of theirs is kept here. The run prints
the pass count and the slowest tests, and fails when any test fails other than those of
ELSEWHERE, which check what EngramStore does otherwise by design.
"""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT, SOURCE_PATH

REPO = os.environ.get("LANGGRAPH_REPO")
SUITE = Path("libs/checkpoint-sqlite/tests")
FILES = ("test_store.py", "test_async_store.py")
KEYS = 200

pytestmark = pytest.mark.skipif(not REPO, reason="set LANGGRAPH_REPO to a langgraph checkout")


def _pointed_at_engram(source: str) -> str:
    """The test module with its own store fixtures renamed away, so the harness's are used."""
    source = re.sub(
        r"^(async )?def (store|create_vector_store)\(", r"\1def _sqlite_\2(", source, flags=re.M
    )
    return source + (
        "\n\nfrom conftest import store  # noqa\nfrom conftest import create_vector_store  # noqa\n"
        if "async def _sqlite_create_vector_store" not in source
        else "\n\nfrom conftest import store  # noqa\n"
        "from conftest import acreate_vector_store as create_vector_store  # noqa\n"
    )


@pytest.mark.timeout(3600)
async def test_langgraphs_store_suite(live_url, settings, api_key_for, tmp_path):
    assert REPO is not None
    assert settings.limits.requests_per_second == 100  # the live server's, per key
    suite = tmp_path / "tests"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    for name in FILES:
        source = (Path(REPO) / SUITE / name).read_text()
        (suite / name).write_text(_pointed_at_engram(source))
    shutil.copy(REPO_ROOT / "tests/support/langgraph_peer_conftest.py", tmp_path / "conftest.py")
    keys = [await api_key_for(f"langgraph-peer-{n}") for n in range(KEYS)]
    env = {
        **os.environ,
        "ENGRAM_URL": live_url,
        "ENGRAM_PEER_KEYS": json.dumps(keys),
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{SOURCE_PATH}",
    }
    result = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_mode=auto",
            "--rootdir",
            str(tmp_path),
            "--durations=0",
            "--durations-min=1",
            "-rfE",
            "--timeout=600",
            "tests",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    print(result.stdout[-20000:])
    summary = result.stdout.strip().splitlines()[-1]
    assert "passed" in summary, result.stdout[-3000:] + result.stderr[-3000:]
    failed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert [name for name in failed if not name.split("::", 1)[1].startswith(ELSEWHERE)] == []


# The peer tests that check what EngramStore does otherwise, by design (docs/clients.md): the
# SQLite store's internals, scores of the tests' character-count embedding, sync calls refused
# on an event loop's thread, and filter keys refused outside [A-Za-z0-9_.-].
ELSEWHERE = (
    "TestSqliteStore::",
    "test_vector_store_initialization",
    "test_nonnull_migrations",
    "test_escape_glob_literal",
    "test_namespace_match_pattern",
    "test_list_namespaces_prefix_uses_indexable_condition",
    "test_scores[",
    "test_embed_with_path",
    "test_no_running_loop[",
    "test_sql_injection_vulnerability[",
)
