"""A throw-away PgBouncer in transaction pooling mode in front of a test cluster, reachable
only on its own Unix socket (trust authentication there, as the cluster's)."""

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.clusters import Cluster, private_dir, server_user
from tests.support.tools import found

SOCKET_NAME = ".s.PGSQL.5432"


PGBOUNCER_PROGRAM = "pgbouncer|/usr/sbin/pgbouncer|/usr/bin/pgbouncer"


def pgbouncer_binary() -> str | None:
    """The installed pgbouncer program, or None."""
    return found(PGBOUNCER_PROGRAM)


@dataclass
class Bouncer:
    """A running pgbouncer: its directory (socket, config, log) and process."""

    directory: Path
    process: subprocess.Popen[bytes]

    def url(self, user: str, database: str = "engram") -> str:
        """A libpq URL through pgbouncer's socket."""
        return f"postgresql://{user}@/{database}?host={self.directory}"

    def stop(self) -> None:
        """Stop pgbouncer and remove its directory."""
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_pgbouncer(cluster: Cluster, *, users: list[str], pool_size: int) -> Bouncer:
    """pgbouncer in transaction mode with `pool_size` server connections per user and
    database, in front of every database of `cluster`."""
    binary = pgbouncer_binary()
    assert binary is not None
    directory = private_dir("eb-")
    (directory / "users.txt").write_text("".join(f'"{user}" ""\n' for user in users))
    (directory / "pgbouncer.ini").write_text(f"""
[databases]
* = host={cluster.socket_dir}

[pgbouncer]
listen_addr =
listen_port = 5432
unix_socket_dir = {directory}
auth_type = trust
auth_file = {directory / "users.txt"}
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 500
logfile = {directory / "pgbouncer.log"}
""")
    if (user := server_user()) is not None:
        for name in ("users.txt", "pgbouncer.ini"):
            shutil.chown(directory / name, user, user)
    process = subprocess.Popen(
        [binary, str(directory / "pgbouncer.ini")],
        user=server_user(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not (directory / SOCKET_NAME).exists():
        log = directory / "pgbouncer.log"
        assert process.poll() is None, log.read_text() if log.exists() else "pgbouncer exited"
        assert time.monotonic() < deadline, "pgbouncer did not start"
        time.sleep(0.05)
    return Bouncer(directory, process)
