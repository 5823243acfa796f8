"""The OpenAI Agents SDK's own session tests (those of its SQLiteSession) run against a live
Engram through EngramSession.

Opt-in: set OPENAI_AGENTS_REPO to a checkout of github.com/openai/openai-agents-python. The
tests are copied to a temporary directory with every SQLiteSession they make turned into an
EngramSession (tests/clients/openai_agents_peer_conftest.py); nothing of theirs is kept here.
The run prints the pass count, and fails when a test fails other than those of ELSEWHERE,
which test SQLiteSession's own machinery. Its tests at v0.22.0 on openai-agents 0.24: 53 of
68 pass, and the 15 others are those of ELSEWHERE.
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

REPO = os.environ.get("OPENAI_AGENTS_REPO")
FILES = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/test_responses.py",
)
KEYS = 60
# Tests of SQLiteSession's own machinery: its connections and their locks, rollbacks and
# closing, and rows they corrupt by writing SQL into its database.
ELSEWHERE = (
    "test_sqlite_session_close_",
    "test_sqlite_session_closed_",
    "test_sqlite_session_file_lock_",
    "test_sqlite_session_failed_",
    "test_sqlite_session_rollback_failure_",
    "test_sqlite_session_post_commit_cancellation_",
    "test_sqlite_session_pop_item_skips_corrupt",
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt",
    "test_sqlite_session_get_items_limit_skips_corrupt",
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt",
)

pytestmark = pytest.mark.skipif(not REPO, reason="set OPENAI_AGENTS_REPO to a checkout")


def _pointed_at_engram(source: str) -> str:
    """The test module with each `SQLiteSession(...)` made by the harness."""
    source = re.sub(r"\bSQLiteSession\(", "PeerSession(", source)
    return source + "\n\nfrom conftest import PeerSession  # noqa: E402\n"


@pytest.mark.timeout(1800)
async def test_the_sdks_session_suite(live_url, api_key_for, tmp_path):
    assert REPO is not None
    for name in FILES:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / "__init__.py").touch()
        target.write_text(_pointed_at_engram((Path(REPO) / name).read_text()))
    shutil.copy(
        REPO_ROOT / "tests/clients/openai_agents_peer_conftest.py", tmp_path / "conftest.py"
    )
    keys = [await api_key_for(f"agents-peer-{n}") for n in range(KEYS)]
    env = {
        **os.environ,
        "ENGRAM_URL": live_url,
        "ENGRAM_PEER_KEYS": json.dumps(keys),
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
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
            "-rfE",
            "--timeout=300",
            "tests/memory",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    print(result.stdout[-20000:])
    assert "passed" in result.stdout.strip().splitlines()[-1], result.stderr[-3000:]
    failed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert [name for name in failed if not name.split("::", 1)[1].startswith(ELSEWHERE)] == []
