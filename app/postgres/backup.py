"""`engram backup`: a base backup by PostgreSQL's own pg_basebackup, beside the WAL archive.

Each backup is a directory `base-<UTC time>` under the directory the operator names: a plain
copy of the data directory with the WAL it needs (`-X stream`, so it restores on its own too)
and `engram-backup.json`, which says when it was taken and where its WAL is archived.
"""

import asyncio
import json
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit

import asyncpg

from app.core.config import Settings
from app.postgres import wal_archive
from app.postgres.db import embedded_pgdata, start_embedded_postgres, to_async_url, to_libpq_url
from app.postgres.embedded_pg import program

logger = logging.getLogger(__name__)

MANIFEST = "engram-backup.json"
PREFIX = "base-"


class BackupError(Exception):
    """A backup or restore that cannot be done; the message tells the operator why."""


@dataclass(frozen=True)
class BaseBackup:
    """One base backup under a backup directory, as its manifest describes it."""

    path: Path
    started_at: datetime
    finished_at: datetime  # the server's clock once pg_basebackup had returned
    start_wal_file: str
    wal_archive_dir: Path | None
    embedded: bool

    def manifest(self) -> dict[str, object]:
        """The JSON written beside the backup's files."""
        return {
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "start_wal_file": self.start_wal_file,
            "wal_archive_dir": str(self.wal_archive_dir) if self.wal_archive_dir else None,
            "embedded": self.embedded,
        }


def read_backup(path: Path) -> BaseBackup:
    """The base backup in `path`, from its manifest."""
    data = json.loads((path / MANIFEST).read_text())
    archive = data.get("wal_archive_dir")
    return BaseBackup(
        path=path,
        started_at=datetime.fromisoformat(data["started_at"]),
        finished_at=datetime.fromisoformat(data["finished_at"]),
        start_wal_file=data["start_wal_file"],
        wal_archive_dir=Path(archive) if archive else None,
        embedded=bool(data["embedded"]),
    )


def list_backups(root: Path) -> list[BaseBackup]:
    """The complete base backups under `root`, oldest first."""
    if not root.is_dir():
        raise BackupError(f"no backup directory {root}")
    found = [
        read_backup(path) for path in sorted(root.glob(PREFIX + "*")) if (path / MANIFEST).is_file()
    ]
    return sorted(found, key=lambda backup: backup.finished_at)


@dataclass(frozen=True)
class Source:
    """The server to back up: a libpq URL and its pg_basebackup."""

    url: str
    pg_basebackup: str
    embedded: bool
    expected_archive: Path | None  # the embedded server must be archiving here


def client_program(settings: Settings, name: str) -> str:
    """PostgreSQL's program `name`: the embedded server's own, else from
    ENGRAM_BACKUP__BIN_DIR or PATH (it must match the external server's major version)."""
    if not settings.database_url:
        return program(name)
    bin_dir = settings.backup.bin_dir
    found = str(bin_dir.expanduser() / name) if bin_dir else shutil.which(name)
    if found is None or not os.access(found, os.X_OK):
        raise BackupError(
            f"{name} not found: install PostgreSQL's client programs (the "
            "server's major version) or set ENGRAM_BACKUP__BIN_DIR"
        )
    return found


def _source(settings: Settings) -> Source:
    pg_basebackup = client_program(settings, "pg_basebackup")
    if settings.database_url:
        return Source(
            to_libpq_url(to_async_url(settings.database_url)),
            pg_basebackup,
            embedded=False,
            expected_archive=None,
        )
    url = start_embedded_postgres(embedded_pgdata(settings), settings)
    return Source(
        url, pg_basebackup, embedded=True, expected_archive=wal_archive.archive_dir(settings)
    )


async def _archiving(source: Source) -> tuple[Path | None, str | None]:
    """(the archive directory, a warning) after checking the server archives as configured."""
    conn = await asyncpg.connect(source.url)
    try:
        mode = await conn.fetchval("SHOW archive_mode")
        command = await conn.fetchval("SHOW archive_command")
    finally:
        await conn.close()
    expected = source.expected_archive
    if expected is not None:
        if mode == "off" or command != wal_archive.archive_command(expected):
            raise BackupError(
                f"the embedded PostgreSQL is running without archiving WAL into {expected}: "
                "stop every engram process using it and start again (ENGRAM_BACKUP__WAL_"
                "ARCHIVE_DIR applies when the server starts)"
            )
        return expected, None
    if mode == "off" or not command:
        where = (
            "set ENGRAM_BACKUP__WAL_ARCHIVE_DIR"
            if source.embedded
            else "configure archive_mode and archive_command on the server"
        )
        return None, (
            f"WAL archiving is off: this backup restores only to the moment it "
            f"ended. For point-in-time restores, {where} (docs/backups.md)."
        )
    return None, None


async def _server_time(url: str) -> datetime:
    conn = await asyncpg.connect(url)
    try:
        value: datetime = await conn.fetchval("SELECT clock_timestamp()")
    finally:
        await conn.close()
    return value.astimezone(UTC)


def _new_backup_dir(root: Path, started_at: datetime) -> Path:
    stem = PREFIX + started_at.strftime("%Y%m%dT%H%M%SZ")
    path, number = root / stem, 1
    while path.exists():
        number += 1
        path = root / f"{stem}-{number}"
    return path


def _start_wal_file(path: Path) -> str:
    """The first WAL segment the backup needs, from its backup_label."""
    for line in (path / "backup_label").read_text().splitlines():
        if line.startswith("START WAL LOCATION:"):
            return line.rsplit("file ", 1)[1].rstrip(")")
    raise BackupError(f"{path}/backup_label names no start WAL location")


def basebackup_call(pg_basebackup: str, url: str, target: Path) -> tuple[list[str], dict[str, str]]:
    """pg_basebackup's argv and environment: the URL's password travels in PGPASSWORD, never
    on the command line, where every local user could read it."""
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password is not None else None
    kept = []
    for pair in parts.query.split("&") if parts.query else []:
        name, _, value = pair.partition("=")
        if unquote(name) == "password":
            password = unquote(value)  # libpq lets the query override the user part
        else:
            kept.append(pair)
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = userinfo.partition(":")[0] + at + host
    bare = parts._replace(netloc=netloc, query="&".join(kept)).geturl()
    env = dict(os.environ)
    if password is not None:
        env["PGPASSWORD"] = password
    argv = [
        pg_basebackup,
        "-D",
        str(target),
        "-F",
        "plain",
        "-X",
        "stream",
        "-c",
        "fast",
        "-w",
        "-l",
        f"engram {target.name}",
        "-d",
        bare,
    ]
    return argv, env


async def take_backup(settings: Settings, root: Path) -> tuple[BaseBackup, str | None]:
    """Take a base backup under `root`; the backup and a warning for the operator, if any."""
    source = await asyncio.to_thread(_source, settings)
    archive, warning = await _archiving(source)
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    started_at = await _server_time(source.url)
    target = _new_backup_dir(root, started_at)
    command, env = basebackup_call(source.pg_basebackup, source.url, target)
    result = await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, env=env
    )
    if result.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise BackupError(f"pg_basebackup failed: {result.stderr.strip()}")
    backup = BaseBackup(
        path=target,
        started_at=started_at,
        finished_at=await _server_time(source.url),
        start_wal_file=_start_wal_file(target),
        wal_archive_dir=archive,
        embedded=source.embedded,
    )
    (target / MANIFEST).write_text(json.dumps(backup.manifest(), indent=2) + "\n")
    return backup, warning


def prune(settings: Settings, root: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` base backups, and the archived WAL only the deleted
    ones needed; the deleted backup directories."""
    backups = list_backups(root)
    doomed, kept = backups[:-keep], backups[-keep:]
    for backup in doomed:
        shutil.rmtree(backup.path)
    oldest = kept[0] if kept else None
    if (
        doomed
        and oldest is not None
        and oldest.wal_archive_dir is not None
        and oldest.wal_archive_dir.is_dir()
    ):
        # -b (PostgreSQL 17+, as embedded) also removes the deleted backups' history files.
        options = [] if settings.database_url else ["-b"]
        cleanup = subprocess.run(
            [
                client_program(settings, "pg_archivecleanup"),
                *options,
                str(oldest.wal_archive_dir),
                oldest.start_wal_file,
            ],
            capture_output=True,
            text=True,
        )
        if cleanup.returncode != 0:
            raise BackupError(f"pg_archivecleanup failed: {cleanup.stderr.strip()}")
    return [backup.path for backup in doomed]
