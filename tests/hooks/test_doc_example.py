"""The "Try the hooks by hand" example of docs/claude-code.md, run as written against a live_url
Engram: the prompt and the session start of the later sessions are given the first's turns."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import REPO_ROOT, SOURCE_PATH

DOC = REPO_ROOT / "docs" / "claude-code.md"
STORED = [
    "We deploy with make release, which pushes the main branch to fly.io.",
    "Understood: releases go out with make release, from main to fly.io.",
    "Staging is deployed on every merge to main.",
    "Got it: each merge to main deploys staging.",
    "And never deploy on a Friday.",
    "Noted: no deploys on Fridays.",
]


def example() -> str:
    """The example's shell code, as the page shows it."""
    section = DOC.read_text().split("## Try the hooks by hand", 1)[1]
    return re.findall(r"```bash\n(.*?)```", section, re.DOTALL)[0]


async def test_the_doc_example_prints_the_earlier_sessions_turns(
    live_url: str, api_key_for: Any, tmp_path: Path
) -> None:
    key = await api_key_for("claude-code-doc")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "engram"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m app.cli "$@"\n')
    shim.chmod(0o755)
    code = example()
    prompt = re.search(
        r"echo '\{\"session_id\": \"now\".*?engram hook UserPromptSubmit\n", code, re.DOTALL
    )
    assert prompt is not None
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "PYTHONPATH": SOURCE_PATH,
        "TMPDIR": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "ENGRAM_URL": live_url,
        "ENGRAM_API_KEY": key,
        "ENGRAM_HOOK_TIMEOUT": "60",
    }

    # The example, then its prompt again, which prints nothing the second time.
    done = subprocess.run(
        ["bash", "-eu", "-o", "pipefail", "-c", code + prompt.group()],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    printed = [json.loads(line)["hookSpecificOutput"] for line in done.stdout.splitlines()]
    assert [answer["hookEventName"] for answer in printed] == ["UserPromptSubmit", "SessionStart"]
    prompted, started = (answer["additionalContext"] for answer in printed)
    assert "## Earlier conversations in this project" in prompted
    assert "make release" in prompted and "fly.io" in prompted
    assert "## Recent conversations in this project" in started
    assert all(said in started for said in STORED)
    print(prompted)
