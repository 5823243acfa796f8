"""Continuous WAL archiving of the embedded PostgreSQL: the server settings that turn it on.

PostgreSQL itself copies each finished WAL segment (`archive_mode`, `archive_command`): it
keeps a segment in pg_wal until the command succeeds, so a full disk or a missing directory
delays archiving but never leaves a gap, and no process of ours has to be supervised.
"""

import shlex
from pathlib import Path

from app.core.config import Settings

# Copy under a temporary name, flush it to disk, rename, then flush the directory: a crash
# never leaves a torn segment under its real name, nor loses a rename PostgreSQL was told
# had succeeded. A segment archived before (the server retries after a crash) counts as
# done when the copy is identical (its directory flushed again), and fails loudly when it
# differs.
ARCHIVE_COMMAND = (
    "if test -f {dest}; then cmp -s %p {dest} && sync {dir}; "
    "else cp %p {part} && sync {part} && mv {part} {dest} && sync {dir}; fi"
)
RESTORE_COMMAND = "cp {source} %p"


def _escaped(path: Path, name: str = "") -> str:
    """A shell word for `path`/`name` (or `path` alone), with a literal % doubled for
    PostgreSQL's expansion."""
    return shlex.quote(str(path).replace("%", "%%") + ("/" + name if name else ""))


def archive_command(archive_dir: Path) -> str:
    """The archive_command that copies segment %f into `archive_dir`."""
    return ARCHIVE_COMMAND.format(
        dest=_escaped(archive_dir, "%f"),
        part=_escaped(archive_dir, "%f.part"),
        dir=_escaped(archive_dir),
    )


def restore_command(archive_dir: Path) -> str:
    """The restore_command that reads segment %f back from `archive_dir`."""
    return RESTORE_COMMAND.format(source=_escaped(archive_dir, "%f"))


def archive_dir(settings: Settings) -> Path | None:
    """The configured WAL archive directory, `~` expanded, or None."""
    configured = settings.backup.wal_archive_dir
    return configured.expanduser().resolve() if configured is not None else None


def server_settings(settings: Settings) -> dict[str, str]:
    """The embedded server's archiving settings (none when no directory is configured)."""
    directory = archive_dir(settings)
    if directory is None:
        return {}
    return {
        "archive_mode": "on",
        "archive_command": archive_command(directory),
        "archive_timeout": f"{settings.backup.archive_timeout_seconds}s",
    }
