"""`engram restore`: a data directory brought back from a base backup and the WAL archive.

The newest base backup that ended before the target is copied into an empty data directory;
the embedded PostgreSQL then replays archived WAL (`recovery.signal`, `restore_command`, and
`recovery_target_time` for a point in time) and promotes. Recovery runs here, to its end,
so the directory left behind is an ordinary one, and any failure is reported and undone.
"""

import asyncio
import contextlib
import functools
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from app.core.clock import now_utc
from app.core.config import Settings
from app.postgres import wal_archive
from app.postgres.backup import MANIFEST, BackupError, BaseBackup, list_backups
from app.postgres.embedded_pg import SUPERUSER, EmbeddedPostgres, program

# Left in a backup by the server it was taken from; none of them belongs to the copy.
NOT_RESTORED = {MANIFEST, "run", "log", ".handle_pids.json", "postmaster.opts"}
RECOVERY_NOTES = re.compile(
    r"(recovery stopping .*|last completed transaction was at .*"
    r"|FATAL: .*)"
)
POLL_SECONDS = 0.2


@dataclass(frozen=True)
class Restored:
    """What a restore did: the data directory, the base backup and WAL archive used, the
    server's notes."""

    pgdata: Path
    backup: BaseBackup
    wal_source: Path | None
    notes: list[str]


def parse_target_time(value: str) -> datetime:
    """An ISO 8601 time with a zone ("2026-11-25T10:00:00Z"), in UTC."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BackupError(
            f"--to {value!r} is not an ISO 8601 time such as 2026-11-25T10:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise BackupError(f"--to {value!r} has no time zone: add Z for UTC or an offset")
    return parsed.astimezone(UTC)


def choose_backup(
    backups: list[BaseBackup], root: Path, target_time: datetime | None
) -> BaseBackup:
    """The newest backup that ended by `target_time` (the newest of all for the latest)."""
    if not backups:
        raise BackupError(f"{root} holds no base backup made by `engram backup`")
    if target_time is None:
        return backups[-1]
    if target_time > now_utc():
        raise BackupError(f"{target_time.isoformat()} is in the future")
    usable = [backup for backup in backups if backup.finished_at <= target_time]
    if not usable:
        raise BackupError(
            f"{target_time.isoformat()} is before the earliest base backup in {root} ended "
            f"({backups[0].finished_at.isoformat()}): a restore reaches only times after a "
            "base backup"
        )
    return usable[-1]


def _wal_source(
    settings: Settings, backup: BaseBackup, given: Path | None, target_time: datetime | None
) -> Path | None:
    source = given or wal_archive.archive_dir(settings) or backup.wal_archive_dir
    if source is not None and not source.is_dir():
        raise BackupError(f"no WAL archive directory {source}")
    if source is None and target_time is not None:
        raise BackupError(
            "no WAL archive: the backup was taken without archiving, so it "
            "restores only to the moment it ended (omit --to)"
        )
    return source


def _check_target(pgdata: Path) -> None:
    if pgdata.exists() and any(pgdata.iterdir()):
        raise BackupError(
            f"{pgdata} is not empty: restore into a new data directory (move "
            "the old one aside first, with every engram process stopped)"
        )


def _check_version(backup: BaseBackup) -> None:
    wanted = (backup.path / "PG_VERSION").read_text().strip()
    version = subprocess.run(
        [program("postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    have = re.search(r"(\d+)(?:\.\d+)?", version)
    if have is None or have.group(1) != wanted:
        raise BackupError(
            f"the backup is of PostgreSQL {wanted}; the embedded server is {version.strip()}"
        )


def _copy(
    backup: BaseBackup, pgdata: Path, server: EmbeddedPostgres, *, archive_recovery: bool
) -> None:
    """The backup's files (and `recovery.signal` for archive recovery) into `pgdata`, owned
    by the server's OS user, mode 0700."""
    shutil.copytree(
        backup.path,
        pgdata,
        dirs_exist_ok=True,
        ignore=lambda folder, names: (
            [n for n in names if n in NOT_RESTORED] if Path(folder) == backup.path else []
        ),
    )
    if archive_recovery:
        (pgdata / "recovery.signal").touch()
    pgdata.chmod(0o700)
    if server.server_user is not None:
        for folder, _, files in os.walk(pgdata):
            shutil.chown(folder, server.server_user, server.server_user)
            for name in files:
                shutil.chown(os.path.join(folder, name), server.server_user, server.server_user)


def _notes(pgdata: Path) -> list[str]:
    """The server log's lines on where recovery stopped, and its fatal errors."""
    try:
        lines = (pgdata / "log").read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return [found.group(1) for line in lines if (found := RECOVERY_NOTES.search(line))]


def _recovery_settings(source: Path | None, target_time: datetime | None) -> dict[str, str]:
    # Recovery archives nothing: promotion would put the new timeline's history file and a
    # .partial segment into the archive, where a server still running on the old timeline
    # (the original, while a copy is restored beside it) keeps writing; the next restore to
    # the latest state would then follow a timeline that is not its own.
    values = {"archive_mode": "off", "recovery_target_action": "promote"}
    if source is not None:
        values["restore_command"] = wal_archive.restore_command(source)
    if target_time is not None:
        values["recovery_target_time"] = target_time.strftime("%Y-%m-%d %H:%M:%S.%f+00")
    return values


async def _wait_for_promotion(server: EmbeddedPostgres, timeout_seconds: float) -> None:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if not server.is_running():
            raise BackupError("recovery failed")
        with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            conn = await asyncpg.connect(server.url(SUPERUSER, "postgres"))
            try:
                if not await conn.fetchval("SELECT pg_is_in_recovery()"):
                    return
            finally:
                await conn.close()
        await asyncio.sleep(POLL_SECONDS)
    raise BackupError(f"recovery did not finish within {timeout_seconds:g} s")


def _archive_history_later(pgdata: Path, server: EmbeddedPostgres) -> None:
    """Mark the new timeline's history file ready, so the restored directory archives it when
    it is served with archiving on (as the live service), and not before."""
    status = pgdata / "pg_wal" / "archive_status"
    histories = sorted((pgdata / "pg_wal").glob("*.history"))
    if not histories or (status / f"{histories[-1].name}.done").exists():
        return
    ready = status / f"{histories[-1].name}.ready"
    ready.touch()
    if server.server_user is not None:
        shutil.chown(ready, server.server_user, server.server_user)


def _explain(error: BackupError, notes: list[str], target_time: datetime | None) -> BackupError:
    if target_time is not None and any(
        "before configured recovery target was reached" in note for note in notes
    ):
        return BackupError(
            f"the WAL archive holds no change after {target_time.isoformat()} yet, so the "
            "state at that time cannot be told from a later one: restore to the latest state "
            "(omit --to), or retry once the segment is archived (within "
            "ENGRAM_BACKUP__ARCHIVE_TIMEOUT_SECONDS of the writes)"
        )
    return BackupError("; ".join([str(error), *notes[-3:]]))


def _undo(pgdata: Path, *, created: bool) -> None:
    """Leave `pgdata` as it was before the restore: missing, or empty."""
    if created:
        shutil.rmtree(pgdata, ignore_errors=True)
        return
    for child in pgdata.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink()


async def restore(
    settings: Settings,
    root: Path,
    pgdata: Path,
    *,
    target_time: datetime | None = None,
    wal_source: Path | None = None,
    timeout_seconds: float = 3600.0,
) -> Restored:
    """Restore the backups of `root` into the new data directory `pgdata`, to the latest
    archived state or to `target_time`."""
    backup = choose_backup(list_backups(root), root, target_time)
    if not backup.embedded:
        raise BackupError(
            f"{backup.path} is a backup of an external server: restore it "
            "with that server's own programs (docs/backups.md)"
        )
    source = _wal_source(settings, backup, wal_source, target_time)
    _check_target(pgdata)
    _check_version(backup)
    archive = wal_archive.archive_dir(settings)
    server = EmbeddedPostgres(
        pgdata,
        extra_settings=_recovery_settings(source, target_time),
        server_dirs=(archive,) if archive else (),
    )
    created = not pgdata.exists()
    try:
        # Without an archive the backup's own WAL (and backup_label) make it consistent.
        await asyncio.to_thread(
            functools.partial(_copy, backup, pgdata, server, archive_recovery=source is not None)
        )
        try:
            await asyncio.to_thread(server.start)
            await _wait_for_promotion(server, timeout_seconds)
        except subprocess.CalledProcessError:
            failed = BackupError(f"recovery of {pgdata} failed")
            raise _explain(failed, _notes(pgdata), target_time) from None
        except BackupError as error:
            raise _explain(error, _notes(pgdata), target_time) from None
        finally:
            await asyncio.to_thread(server.release)
            await asyncio.to_thread(server.stop)  # when it started but never became ready
        await asyncio.to_thread(_archive_history_later, pgdata, server)
        # The recovery settings are done with; the next start writes the service's own.
        EmbeddedPostgres(
            pgdata, extra_settings=wal_archive.server_settings(settings)
        ).write_server_settings()
    except BaseException:
        _undo(pgdata, created=created)
        raise
    return Restored(pgdata=pgdata, backup=backup, wal_source=source, notes=_notes(pgdata))
