"""Two `engram serve` processes (replicas) started together on one empty database: the schema
is migrated once, and every job either of them is given runs exactly once."""

import asyncio
import os
import signal
import subprocess
import sys
import time

import asyncpg
import httpx

from app.postgres.db import to_libpq_url
from tests.support.database import scratch_database
from tests.support.live_server import free_port
from tests.support.paths import REPO_ROOT

JOBS = 8


def start_replica(url: str, port: int, data_dir: str, log) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "ENGRAM_DATA_DIR": data_dir,
        "ENGRAM_JOBS__WORKER_ENABLED": "true",
        "ENGRAM_JOBS__SCHEDULER_ENABLED": "false",
        "ENGRAM_JOBS__POLL_INTERVAL_SECONDS": "0.2",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--no-auth", "--port", str(port)],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )


def wait_ready(base: str, process: subprocess.Popen[bytes], log_path) -> None:
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, log_path.read_text()[-3000:]
        assert time.monotonic() < deadline, "a replica did not become ready"
        time.sleep(0.5)


async def test_two_replicas_migrate_once_and_run_each_job_once(database_url, tmp_path):
    async with scratch_database(to_libpq_url(database_url), "engram_replicas") as url:
        ports = [free_port(), free_port()]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        logs = [tmp_path / f"replica{i}.log" for i in range(2)]
        handles = [path.open("wb") for path in logs]
        replicas = [
            start_replica(url, port, str(tmp_path / f"data{i}"), handle)
            for i, (port, handle) in enumerate(zip(ports, handles, strict=True))
        ]
        try:
            for base, replica, log in zip(bases, replicas, logs, strict=True):
                await asyncio.to_thread(wait_ready, base, replica, log)
            async with httpx.AsyncClient(timeout=60) as http:
                ids = [
                    (await http.post(f"{bases[i % 2]}/v1/jobs/decay")).json()["id"]
                    for i in range(JOBS)
                ]
                deadline = time.monotonic() + 120
                while True:
                    jobs = [
                        (await http.get(f"{bases[0]}/v1/jobs/{job_id}")).json() for job_id in ids
                    ]
                    if all(job["status"] == "succeeded" for job in jobs):
                        break
                    assert time.monotonic() < deadline, jobs
                    await asyncio.sleep(0.5)
            assert [job["attempts"] for job in jobs] == [1] * JOBS
            connection = await asyncpg.connect(to_libpq_url(url))
            try:
                versions = await connection.fetch("SELECT version_num FROM alembic_version")
                runs = await connection.fetchval(
                    "SELECT count(*) FROM jobs WHERE started_at IS NOT NULL"
                )
            finally:
                await connection.close()
            assert len(versions) == 1
            assert runs == JOBS
        finally:
            for replica in replicas:
                if replica.poll() is None:
                    os.killpg(replica.pid, signal.SIGTERM)
            for replica in replicas:
                replica.wait(timeout=60)
            for handle in handles:
                handle.close()
