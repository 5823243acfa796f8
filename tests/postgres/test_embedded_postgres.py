"""The embedded PostgreSQL: private socket, no trust, stopped with Engram, restarted if it dies."""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from app.core.config import Settings
from app.postgres.embedded_pg import (
    EmbeddedPostgres,
    is_private_dir,
    memory_limit,
    pid_alive,
    shared_buffers,
)
from tests.support.paths import REPO_ROOT

# Long enough that <pgdata>/run/.s.PGSQL.5432 does not fit a Unix socket path: the case that
# used to put the socket in a world-writable directory under /tmp.
LONG_NAME = "d" * 90


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a long path, sharing the test run's exported embedding model."""
    root = tmp_path_factory.mktemp("embedded") / LONG_NAME
    root.mkdir()
    models = Settings().resolved_data_dir / "models"
    if models.exists():
        (root / "models").symlink_to(models)
    return root


def _postmaster_pid(pgdata: Path) -> int:
    return int((pgdata / "postmaster.pid").read_text().splitlines()[0])


def _wait_for_exit(pid: int, what: str = "the postmaster to exit") -> None:
    """Until process `pid` is gone: `pg_ctl stop -w` returns once postmaster.pid is
    removed, a moment before the process has exited."""
    _wait_until(lambda: not pid_alive(pid), 60, what)


@pytest.fixture
def pgdata(data_dir: Path) -> Path:
    """The module's cluster, initialised (whichever test runs first, or alone) and with no
    server running."""
    path = data_dir / "pgdata"
    running = EmbeddedPostgres(path).postmaster() if (path / "PG_VERSION").exists() else None
    if running is not None:
        _wait_for_exit(running[0], "the previous test's server to stop")
    if not (path / "PG_VERSION").exists():
        server = EmbeddedPostgres(path)
        server.start()
        postmaster = _postmaster_pid(path)
        server.release()
        _wait_for_exit(postmaster)
    return path


def _wait_until(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


async def test_socket_dir_is_private_and_no_connection_is_trusted(pgdata: Path) -> None:
    server = EmbeddedPostgres(pgdata)
    server.start()
    try:
        assert server.socket_dir is not None
        assert len(str(server.socket_dir / ".s.PGSQL.5432")) <= 100
        assert is_private_dir(server.socket_dir, server.server_uid)
        conn = await asyncpg.connect(server.url("postgres", "postgres"))
        try:
            rules = await conn.fetch(
                "SELECT type, database, user_name, auth_method FROM pg_hba_file_rules"
            )
            listen = await conn.fetchval("SHOW listen_addresses")
        finally:
            await conn.close()
        assert [(r["type"], r["database"], r["user_name"], r["auth_method"]) for r in rules] == [
            ("local", ["all"], ["all"], "peer"),
            ("local", ["replication"], ["postgres"], "peer"),
        ]
        assert listen == ""
    finally:
        server.release()


async def test_engram_settings_apply_and_alter_system_still_overrides_them(pgdata: Path) -> None:
    server = EmbeddedPostgres(pgdata)
    server.start()
    try:
        conn = await asyncpg.connect(server.url("postgres", "postgres"))
        try:
            assert await conn.fetchval("SHOW jit") == "off"
            assert await conn.fetchval("SHOW shared_buffers") == shared_buffers(memory_limit())
            await conn.execute("ALTER SYSTEM SET jit = on")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()
        conn = await asyncpg.connect(server.url("postgres", "postgres"))
        try:
            assert await conn.fetchval("SHOW jit") == "on"
            await conn.execute("ALTER SYSTEM RESET jit")
            await conn.execute("SELECT pg_reload_conf()")
        finally:
            await conn.close()
    finally:
        server.release()
    conf = (pgdata / "postgresql.conf").read_text()
    assert conf.count("include_if_exists = 'engram.conf'") == 1


def test_shared_buffers_take_a_quarter_of_memory_within_bounds() -> None:
    assert shared_buffers(24 * 2**30) == "6144MB"
    assert shared_buffers(256 * 2**20) == "128MB"
    assert shared_buffers(None) == "512MB"
    memory = memory_limit()
    assert memory is not None and memory > 0


async def test_a_restarted_server_reads_back_the_blocks_its_buffers_held(pgdata: Path) -> None:
    server = EmbeddedPostgres(pgdata)
    server.start()
    postmaster = _postmaster_pid(pgdata)
    try:
        conn = await asyncpg.connect(server.url("postgres", "postgres"))
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
            await conn.execute("DROP TABLE IF EXISTS warm")
            await conn.execute(
                "CREATE TABLE warm AS SELECT g, repeat('x', 200) AS pad "
                "FROM generate_series(1, 20000) AS g"
            )
            blocks = await conn.fetchval("SELECT pg_relation_size('warm') / 8192")
        finally:
            await conn.close()
    finally:
        server.release()  # the last user stops the server, which records its buffers
    _wait_for_exit(postmaster)
    assert (pgdata / "autoprewarm.blocks").exists()
    server = EmbeddedPostgres(pgdata)
    server.start()
    try:
        conn = await asyncpg.connect(server.url("postgres", "postgres"))
        try:
            deadline = time.monotonic() + 30
            cached = 0
            while time.monotonic() < deadline and cached < blocks:
                cached = await conn.fetchval(
                    "SELECT count(*) FROM pg_buffercache "
                    "WHERE relfilenode = pg_relation_filenode('warm') "
                    "AND reldatabase = (SELECT oid FROM pg_database "
                    "                   WHERE datname = current_database())"
                )
                await asyncio.sleep(0.25)
            assert cached >= blocks
            await conn.execute("DROP TABLE warm")
        finally:
            await conn.close()
    finally:
        server.release()


async def test_stale_pids_are_dropped_and_the_last_user_stops_the_server(pgdata: Path) -> None:
    dead_pid = 2**22 + 17  # above Linux's largest pid_max: no such process
    assert not pid_alive(dead_pid)
    (pgdata / ".handle_pids.json").write_text(json.dumps([dead_pid]))
    server = EmbeddedPostgres(pgdata)
    server.start()
    postmaster = _postmaster_pid(pgdata)
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == [os.getpid()]
    server.release()
    _wait_for_exit(postmaster)
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=[1, 2], ids=["one process", "two workers"])
def served(
    request: pytest.FixtureRequest, data_dir: Path, pgdata: Path, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`engram serve` (one process, or `--workers 2`) on the embedded server of `data_dir`,
    ready; stopped afterwards."""
    port = _free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "ENGRAM_DATABASE_URL", "ENGRAM_APP_DATABASE_URL")
    }
    env.update(
        ENGRAM_DATA_DIR=str(data_dir),
        ENGRAM_JOBS__WORKER_ENABLED="false",
        ENGRAM_JOBS__SCHEDULER_ENABLED="false",
        ENGRAM_EMBEDDED_SUPERVISE_SECONDS="2",
        ENGRAM_CONFIG=str(tmp_path / "none.toml"),
    )
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "serve",
            "--port",
            str(port),
            "--no-auth",
            "--workers",
            str(request.param),
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert process.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        try:
            return httpx.get(base + "/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        _wait_until(ready, 300, "engram serve to be ready")
        yield process, base
    finally:
        pgdata = data_dir / "pgdata"
        postmaster = EmbeddedPostgres(pgdata).postmaster()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        log.close()
        # The next test starts its own server on this data directory.
        if postmaster is not None:
            _wait_for_exit(postmaster[0])


def test_sigterm_of_engram_serve_stops_postgres(served, data_dir: Path) -> None:
    process, _ = served
    postmaster = _postmaster_pid(data_dir / "pgdata")
    process.send_signal(signal.SIGTERM)
    # uvicorn re-raises the signal after its shutdown; `engram` turns it into exit status 143.
    assert process.wait(timeout=60) in (0, 128 + signal.SIGTERM, -signal.SIGTERM)
    _wait_until(lambda: not pid_alive(postmaster), 30, "the postmaster to stop")


def test_a_killed_postmaster_is_restarted_and_readyz_follows(served, data_dir: Path) -> None:
    _, base = served
    pgdata = data_dir / "pgdata"
    postmaster = _postmaster_pid(pgdata)
    os.kill(postmaster, signal.SIGKILL)
    statuses: list[int] = []

    def readyz_is(status: int) -> bool:
        try:
            statuses.append(httpx.get(base + "/readyz", timeout=5).status_code)
        except httpx.HTTPError:
            return False
        return statuses[-1] == status

    _wait_until(lambda: readyz_is(503), 30, "/readyz to report the database down")
    _wait_until(lambda: readyz_is(200), 90, "/readyz to be ready again")
    assert _postmaster_pid(pgdata) != postmaster
    assert pid_alive(_postmaster_pid(pgdata))
