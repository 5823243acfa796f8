"""PreCompact and SessionEnd: the hook only starts a detached process that stores the
transcript's new turns with a deadline of its own, and returns at once, well within the
1.5 s Claude Code gives SessionEnd hooks. The process is in a session of its own, so
nothing that ends the hook (its timeout, a kill of its process group) ends the upload.

Run as `python -m engram_client.hooks.handoff <event> <butler> <session_id> <transcript>`, it
is that process. Standard library only until then: the hook imports nothing else."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from engram_client.hooks.config import Deadline, HookConfig

LOG_NAME = "uploads.log"
# The log starts again past this size.
MAX_LOG_BYTES = 1_000_000


def run_handoff(event: str, config: HookConfig, stdin: TextIO) -> int:
    """Start the upload of the payload's transcript in a detached process; always 0 (an error
    is one line on stderr)."""
    try:
        payload = json.loads(stdin.read() or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the payload is not a JSON object")
        hand_off(event, payload, config)
    except Exception as error:  # the session goes on (or ends) whatever happened here
        sys.stderr.write(f"engram hook: {event}: {type(error).__name__}: {error}\n")
    return 0


def hand_off(event: str, payload: dict[str, Any], config: HookConfig) -> subprocess.Popen[bytes]:
    """The detached process storing the new turns of the payload's transcript."""
    session_id = payload.get("session_id")
    transcript = payload.get("transcript_path")
    if not isinstance(session_id, str) or not session_id.strip():
        raise ValueError("the payload has no session_id")
    if not isinstance(transcript, str) or not transcript:
        raise ValueError("the payload has no transcript_path")
    butler = config.butler_of(payload.get("cwd"))
    config.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    log_path = config.state_dir / LOG_NAME
    try:
        fresh = log_path.stat().st_size > MAX_LOG_BYTES
    except FileNotFoundError:
        fresh = True
    with log_path.open("w" if fresh else "a", encoding="utf-8") as log:
        return subprocess.Popen(
            [sys.executable, "-m", __name__, event, butler, session_id[:200], transcript],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )


def upload(event: str, butler: str, session_id: str, transcript: str) -> int:
    """Store the transcript's new turns within ENGRAM_HOOK_UPLOAD_TIMEOUT; 0, or 1 when
    that failed (said in the log)."""
    from engram_client.hooks.capture import capture
    from engram_client.hooks.client import Engram, describe

    config = HookConfig.from_env()
    deadline = Deadline(config.upload_timeout)
    watchdog = threading.Timer(config.upload_timeout, _give_up, (event, session_id))
    watchdog.daemon = True
    watchdog.start()
    engram = Engram(config, deadline)
    try:
        path = Path(transcript).expanduser()
        stored = capture(engram, path, butler, session_id, config.state_dir)
        _note(f"{event} {session_id}: stored {stored} turn(s) of {path}")
        return 0
    except Exception as error:
        _note(f"{event} {session_id}: {describe(error)}")
        return 1
    finally:
        engram.close()
        watchdog.cancel()


def _give_up(event: str, session_id: str) -> None:
    _note(f"{event} {session_id}: deadline passed; the next event stores the rest")
    os._exit(1)


def _note(message: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    sys.stderr.write(f"{stamp} engram hook upload: {message}\n")
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(upload(*sys.argv[1:5]))
