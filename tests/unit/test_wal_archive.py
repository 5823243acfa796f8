"""The embedded server's archive_command makes an archived segment durable: the copy is
flushed before it takes its real name, and the directory after the rename, so a crash right
after PostgreSQL counts a segment as archived cannot lose it from the archive."""

import os
import re
import subprocess
from pathlib import Path

from app.postgres.wal_archive import archive_command

SHIM = """#!/bin/sh
for arg in "$@"; do
  if [ -d "$arg" ]; then kind=dir; else kind=file; fi
  printf '%s %s %s\\n' "$kind" "$arg" "$(ls "{archive}")" >> "{log}"
done
"""


def _expand(command: str, path: Path) -> str:
    """The command as PostgreSQL runs it for the segment at `path` (%p, %f, %%)."""
    values = {"p": str(path), "f": path.name, "%": "%"}
    return re.sub(r"%(.)", lambda match: values[match.group(1)], command)


def _archive(tmp_path: Path, archive: Path, segment: Path) -> list[str]:
    """Run the archive command for `segment` with a `sync` that logs what it was given."""
    bin_dir, log = tmp_path / "bin", tmp_path / "sync.log"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "sync"
    shim.write_text(SHIM.replace("{archive}", str(archive)).replace("{log}", str(log)))
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", _expand(archive_command(archive), segment)], env=env, check=True)
    calls = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def test_the_segment_is_flushed_then_the_directory_after_the_rename(tmp_path: Path) -> None:
    archive = tmp_path / "WAL 100%"
    archive.mkdir()
    segment = tmp_path / "000000010000000000000001"
    segment.write_bytes(b"wal" * 1000)

    calls = _archive(tmp_path, archive, segment)

    assert calls[0] == f"file {archive}/{segment.name}.part {segment.name}.part"
    assert calls[-1] == f"dir {archive} {segment.name}"
    assert (archive / segment.name).read_bytes() == segment.read_bytes()


def test_a_segment_archived_before_is_flushed_again_when_found_identical(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    segment = tmp_path / "000000010000000000000002"
    segment.write_bytes(b"wal")
    (archive / segment.name).write_bytes(b"wal")

    assert _archive(tmp_path, archive, segment) == [f"dir {archive} {segment.name}"]
