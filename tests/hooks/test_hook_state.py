"""The per-session state of the capturing hooks: old sessions swept, a held lock never."""

import os
import socket
import time
from pathlib import Path

import pytest

from engram_client.hooks.capture import capture
from engram_client.hooks.client import Engram
from engram_client.hooks.config import Deadline, HookConfig
from engram_client.hooks.state import KEEP_SECONDS, CapturedTurns, StateLocked

PAYLOADS = Path(__file__).parent / "payloads"


def closed_url() -> str:
    """An address nothing listens on: a capture that gets past the lock fails to connect."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    return f"http://127.0.0.1:{port}"


def test_a_held_lock_older_than_the_sweep_age_survives_and_keeps_a_second_capture_out(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    config = HookConfig(
        url=closed_url(), api_key=None, timeout=1, token_budget=100, butler=None, state_dir=state
    )
    long_ago = time.time() - KEEP_SECONDS - 3600

    with CapturedTurns.locked(state, "long-session", wait=1):
        (lock,) = state.glob("*.lock")
        os.utime(lock, (long_ago, long_ago))
        with CapturedTurns.locked(state, "another-session", wait=1):
            pass  # its end sweeps the state of sessions untouched for 30 days

        assert lock.exists()
        engram = Engram(config, Deadline(1))
        try:
            with pytest.raises(StateLocked):
                capture(
                    engram, PAYLOADS / "transcript.jsonl", "claude-code:shop", "long-session", state
                )
        finally:
            engram.close()


def test_the_state_of_sessions_untouched_for_30_days_is_swept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with CapturedTurns.locked(state, "old-session", wait=1) as captured:
        captured.add(["u-1"])
        captured.save()
    long_ago = time.time() - KEEP_SECONDS - 3600
    old = sorted(state.iterdir())
    for path in old:
        os.utime(path, (long_ago, long_ago))

    with CapturedTurns.locked(state, "new-session", wait=1) as captured:
        captured.add(["u-2"])
        captured.save()

    assert [path.suffix for path in old] == [".json", ".lock"]
    assert not [path for path in old if path.exists()]
    assert len(list(state.iterdir())) == 2  # the new session's .json and .lock
