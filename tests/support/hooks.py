"""What the hooks' tests share: recorded payloads and transcripts, running `engram hook` and
`engram hooks` as Claude Code and a developer do, and reading what reached Engram."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.paths import REPO_ROOT, SOURCE_PATH

PAYLOADS = REPO_ROOT / "tests" / "hooks" / "payloads"
FIRST_SESSION = "0b7e4d2c-91a3-4f6e-8d25-7c1a9e3f5b48"
SECOND_SESSION = "6f1c2a9e-5b7d-4e0a-9c3b-2d8f4a1e7b60"


def payload(name: str, **fields: Any) -> str:
    """A recorded payload with some fields replaced."""
    recorded = json.loads((PAYLOADS / f"{name}.json").read_text())
    return json.dumps({**recorded, **fields})


def hook(
    event: str, stdin: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`engram hook <event>` with `stdin` as Claude Code gives it."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "hook", event],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def hook_env(tmp_path: Path, url: str, key: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a hook: the worktree's code, Engram's address, a state dir."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path / "home"),
        "PYTHONPATH": SOURCE_PATH,
        "ENGRAM_URL": url,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **extra,
    }
    if key:
        env["ENGRAM_API_KEY"] = key
    return env


def transcript_copy(tmp_path: Path, name: str, session_id: str) -> Path:
    """The recorded transcript as a session's file (its session id rewritten)."""
    text = (PAYLOADS / "transcript.jsonl").read_text().replace(FIRST_SESSION, session_id)
    path = tmp_path / name
    path.write_text(text)
    return path


def episodes(url: str, key: str, butler: str) -> list[dict[str, Any]]:
    """Every episode of the butler, oldest first."""
    answer = httpx.get(
        f"{url}/v1/episodes",
        params={"butler": butler, "limit": 200},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    answer.raise_for_status()
    return sorted(answer.json()["items"], key=lambda item: item["sequence"])


def stored_when(done: Any, url: str, key: str, butler: str, seconds: float = 60) -> list[str]:
    """The butler's episodes' contents once `done(contents)` holds (a detached upload is
    under way), polled for at most `seconds`."""
    give_up = time.monotonic() + seconds
    while not done(contents := [item["content"] for item in episodes(url, key, butler)]):
        if time.monotonic() > give_up:
            break
        time.sleep(0.1)
    return contents


THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}],
            }
        ],
    },
}


def engram(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """The `engram` command in `cwd`, with `home` as the user's home."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "PYTHONPATH": SOURCE_PATH,
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def engram_hook(
    *args: str, cwd: Path, home: Path, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The client's `engram-hook` command in `cwd`, with `home` as the user's home (or `env`)."""
    if env is None:
        env = {
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "PYTHONPATH": SOURCE_PATH,
        }
    return subprocess.run(
        [sys.executable, "-m", "engram_client.hooks", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
