"""Which turns of a Claude Code session were already stored: one small JSON file per session
under the user's state directory, read and written under an exclusive lock."""

import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

# State of sessions untouched this long is deleted when another session is captured.
KEEP_SECONDS = 30 * 24 * 3600
LOCK_POLL_SECONDS = 0.02


class StateLocked(Exception):
    """Another hook of the session held the lock until the deadline."""


class CapturedTurns:
    """The ids of a session's stored turns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids: set[str] = set()
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            self.ids = {str(turn_id) for turn_id in loaded.get("captured", [])}
        except (OSError, ValueError, AttributeError):
            pass

    def __contains__(self, turn_id: object) -> bool:
        return turn_id in self.ids

    def add(self, turn_ids: Iterable[str]) -> None:
        """Remember these turns as stored."""
        self.ids.update(turn_ids)

    def save(self) -> None:
        """Write the file whole or not at all (a new file renamed over the old)."""
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps({"captured": sorted(self.ids)}), encoding="utf-8")
        os.replace(partial, self.path)

    @classmethod
    @contextmanager
    def locked(cls, state_dir: Path, session_id: str, wait: float) -> Iterator["CapturedTurns"]:
        """The session's captured turns, with its lock held for the block (waiting at most
        `wait` seconds for another hook of the session to finish)."""
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        with (state_dir / f"{name}.lock").open("a") as lock:
            give_up = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= give_up:
                        raise StateLocked(session_id) from None
                    time.sleep(LOCK_POLL_SECONDS)
            try:
                yield cls(state_dir / f"{name}.json")
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
        _forget_old(state_dir)


def _forget_old(state_dir: Path) -> None:
    """Delete the state of sessions untouched for KEEP_SECONDS."""
    cutoff = time.time() - KEEP_SECONDS
    for path in state_dir.iterdir():
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            continue
