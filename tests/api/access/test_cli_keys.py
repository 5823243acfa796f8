"""`engram keys create` prints the key alone on stdout, so scripts can capture it."""

import asyncio
import os
import subprocess
import sys


async def test_keys_create_prints_only_a_working_key_on_stdout(database_url, anonymous_client):
    env = {**os.environ, "ENGRAM_DATABASE_URL": database_url, "ENGRAM_MIGRATE_ON_START": "false"}
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "keys", "create", "--tenant", "cli"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    [key] = result.stdout.splitlines()
    assert "tenant: cli" in result.stderr
    response = await anonymous_client.get(
        "/v1/episodes", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200
    unauthenticated = await anonymous_client.get("/v1/episodes")
    assert unauthenticated.status_code == 401


async def test_keys_create_with_the_embedded_server_and_no_runtime_dir_warns_of_nothing(tmp_path):
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("XDG_RUNTIME_DIR", "DATABASE_URL", "ENGRAM_DATABASE_URL")
    }
    env["ENGRAM_DATA_DIR"] = str(tmp_path / "data")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "keys", "create", "--tenant", "cli"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    [key] = result.stdout.splitlines()
    assert key.startswith("egk_")
    assert "Warning" not in result.stderr, result.stderr
    assert "tenant: cli" in result.stderr


async def test_keys_create_read_only_makes_a_key_that_reads_but_does_not_write(
    database_url, anonymous_client
):
    env = {**os.environ, "ENGRAM_DATABASE_URL": database_url, "ENGRAM_MIGRATE_ON_START": "false"}
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "keys", "create", "--tenant", "cli", "--read-only"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    [key] = result.stdout.splitlines()
    headers = {"Authorization": f"Bearer {key}"}
    assert (await anonymous_client.get("/v1/episodes", headers=headers)).status_code == 200
    refused = await anonymous_client.post(
        "/v1/episodes", headers=headers, json={"content": "x", "butler": "b"}
    )
    assert refused.status_code == 403
    listing = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "keys", "list", "--tenant", "cli"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert " read " in listing.stdout


async def test_keys_create_with_butlers_makes_a_key_limited_to_them(
    database_url, tenant_client, anonymous_client
):
    owner = await tenant_client("cli")
    for butler in ("planner", "critic", "scout"):
        response = await owner.post(
            "/v1/episodes", json={"content": f"{butler} note", "butler": butler}
        )
        assert response.status_code == 201, response.text
    env = {**os.environ, "ENGRAM_DATABASE_URL": database_url, "ENGRAM_MIGRATE_ON_START": "false"}
    result = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "app.cli",
            "keys",
            "create",
            "--tenant",
            "cli",
            "--butlers",
            "planner, critic",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    [key] = result.stdout.splitlines()
    assert "limited to butlers: planner, critic" in result.stderr
    listed = (
        await anonymous_client.get("/v1/episodes", headers={"Authorization": f"Bearer {key}"})
    ).json()
    assert sorted(e["butler"] for e in listed["items"]) == ["critic", "planner"]
    listing = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "keys", "list", "--tenant", "cli"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert "planner,critic" in listing.stdout
    refused = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "app.cli",
            "keys",
            "create",
            "--tenant",
            "cli",
            "--butlers",
            "global",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert refused.returncode != 0 and "not a butler" in refused.stderr
