"""What the hooks note per Claude Code session: the turns already stored and the memories
already shown. One small JSON file per session and kind under the user's state directory,
read and written under an exclusive lock."""

import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

# State of sessions untouched this long is deleted when another session is captured.
KEEP_SECONDS = 30 * 24 * 3600
LOCK_POLL_SECONDS = 0.02
# The files of a session's state (nothing else in the directory is ever swept).
_SESSION_FILE = re.compile(r"^[0-9a-f]{32}(\.shown)?\.(json|lock|tmp)$")

Noted = TypeVar("Noted", bound="SessionIds")


class StateLocked(Exception):
    """Another hook of the session held the lock until the deadline."""


def session_key(session_id: str) -> str:
    """The file name stem of a session's state (a digest: any session id is a safe name)."""
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SessionIds:
    """A set of ids noted for one session, in `<key><SUFFIX>.json`."""

    SUFFIX = ""
    FIELD = "ids"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ids: set[str] = set()
        self.loaded: dict[str, Any] = {}
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict):
                self.loaded = loaded
                self.ids = {str(noted) for noted in loaded.get(self.FIELD, [])}
        except (OSError, ValueError, TypeError):
            pass

    def __contains__(self, noted: object) -> bool:
        return noted in self.ids

    def add(self, ids: Iterable[str]) -> None:
        """Note these ids."""
        self.ids.update(ids)

    def fields(self) -> dict[str, Any]:
        """What the file holds."""
        return {self.FIELD: sorted(self.ids)}

    def save(self) -> None:
        """Write the file whole or not at all (a new file renamed over the old)."""
        partial = self.path.with_suffix(".tmp")
        partial.write_text(json.dumps(self.fields()), encoding="utf-8")
        os.replace(partial, self.path)

    @classmethod
    def read(cls: type[Noted], state_dir: Path, session_id: str) -> Noted:
        """The session's ids as last saved, without the lock (a file is replaced whole)."""
        return cls(state_dir / f"{session_key(session_id)}{cls.SUFFIX}.json")

    @classmethod
    @contextmanager
    def locked(cls: type[Noted], state_dir: Path, session_id: str, wait: float) -> Iterator[Noted]:
        """The session's ids, with its lock held for the block (waiting at most `wait`
        seconds for another hook of the session to finish)."""
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = f"{session_key(session_id)}{cls.SUFFIX}"
        with _held(state_dir / f"{name}.lock", time.monotonic() + wait, session_id):
            yield cls(state_dir / f"{name}.json")
        _forget_old(state_dir)


class CapturedTurns(SessionIds):
    """The ids of a session's stored turns, and the stored final replies (`said:` ids) that
    the transcript has not yet caught up with."""

    FIELD = "captured"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        pending = self.loaded.get("pending", [])
        self.pending: set[str] = {str(said) for said in pending if isinstance(said, str)}

    def fields(self) -> dict[str, Any]:
        """What the file holds."""
        return {**super().fields(), "pending": sorted(self.pending)}


class ShownMemories(SessionIds):
    """The ids of the memories a session's context was given."""

    SUFFIX = ".shown"
    FIELD = "shown"


@contextmanager
def _held(path: Path, give_up: float, session_id: str) -> Iterator[None]:
    """The lock file at `path` held exclusively for the block."""
    while True:
        with path.open("a") as lock:
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= give_up:
                        raise StateLocked(session_id) from None
                    time.sleep(LOCK_POLL_SECONDS)
            try:
                # A lock file deleted (by the sweep below) after it was opened here locks
                # nothing: start again with the file now at `path`.
                if _same_file(lock.fileno(), path):
                    os.utime(lock.fileno())  # in use: not swept as old
                    yield
                    return
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino)


def _forget_old(state_dir: Path) -> None:
    """Delete the state of sessions untouched for KEEP_SECONDS whose lock no hook holds."""
    cutoff = time.time() - KEEP_SECONDS
    old: dict[str, list[Path]] = {}
    for path in state_dir.iterdir():
        if not _SESSION_FILE.match(path.name):
            continue
        try:
            if path.stat().st_mtime < cutoff:
                old.setdefault(path.stem, []).append(path)
        except OSError:
            continue
    for stem, paths in old.items():
        _forget_session(state_dir / f"{stem}.lock", paths)


def _forget_session(lock_path: Path, paths: list[Path]) -> None:
    """Delete these files of a session under its lock, the lock file last; nothing when a
    hook of the session holds the lock."""
    try:
        lock = os.open(lock_path, os.O_RDONLY)
    except OSError:
        lock = None
    try:
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for path in sorted(paths, key=lambda path: path == lock_path):
            path.unlink(missing_ok=True)
    except OSError:
        return
    finally:
        if lock is not None:
            os.close(lock)
