"""The maintenance commands work on a new data directory: they bring the schema to head
first, as `engram serve` does."""

import os
import subprocess
import sys

from tests.support.paths import REPO_ROOT


def test_reindex_text_on_a_new_data_directory_migrates_and_reports(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("ENGRAM_") and key != "DATABASE_URL"
    }
    env["ENGRAM_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-m", "app.cli", "reindex-text"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == (
        "episodes: 0 read again, facts: 0 read again, rules: 0 read again"
    )
