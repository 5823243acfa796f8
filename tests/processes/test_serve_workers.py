"""`engram serve --workers N`: several processes over one database, started as a user would."""

import os
import signal
import subprocess
import sys
import time

import httpx

from tests.support.live_server import free_port


def children(pid: int) -> list[int]:
    """The ids of the processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def test_two_workers_serve_one_database(database_url, tmp_path, leaves_no_rows):
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "ENGRAM_DATA_DIR": str(tmp_path),
        "ENGRAM_JOBS__WORKER_ENABLED": "false",
        "ENGRAM_JOBS__SCHEDULER_ENABLED": "false",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "serve",
            "--workers",
            "2",
            "--no-auth",
            "--port",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None, server.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "workers did not become ready"
            time.sleep(0.5)
        stored = [
            httpx.post(
                f"{base}/v1/episodes",
                timeout=60,
                json={"content": f"note {i}", "butler": "workers"},
            ).json()["id"]
            for i in range(6)
        ]
        listed = httpx.get(f"{base}/v1/episodes", params={"butler": "workers"}, timeout=60)
        assert sorted(item["id"] for item in listed.json()["items"]) == sorted(stored)
        assert len(children(server.pid)) >= 2, "expected two worker processes"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
