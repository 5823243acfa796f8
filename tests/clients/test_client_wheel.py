"""The engram-memory-client distribution on its own: its wheel and sdist build from clients/python,
the wheel installs in a fresh venv without any of the server's dependencies, and there the
client talks to a live Engram and `engram-hook` runs."""

import asyncio
import json
import shlex
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.client_wheel import (
    SERVER_ONLY,
    ClientVenv,
    build,
    import_seconds,
    install,
    installed,
)

STORE_AND_SEARCH = """
import sys
from engram_client import EngramClient

url, key = sys.argv[1:3]
with EngramClient(url, api_key=key) as engram:
    engram.store_episode("Ann: the wheel venv keeps bees in Lyon", butler="wheel")
    hits = engram.search("Who keeps bees?").results
    print(hits[0].content)
"""


@pytest.fixture(scope="module")
def client_wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientVenv]:
    """The client's wheel (and sdist) built, and the wheel installed in a new venv."""
    root = tmp_path_factory.mktemp("client-wheel")
    wheel, sdist = build(root / "dist")
    venv = install(wheel, root / "venv")
    print(
        f"\nengram-memory-client: wheel {wheel.stat().st_size / 1000:.0f} kB, sdist "
        f"{sdist.stat().st_size / 1000:.0f} kB, pip install {venv.install_seconds:.1f} s, "
        f"import {import_seconds(venv) * 1000:.0f} ms (median of 3)"
    )
    yield venv


def test_the_wheel_and_sdist_carry_the_client_its_hooks_and_the_engram_hook_script(
    client_wheel_venv: ClientVenv,
) -> None:
    wheel = client_wheel_venv.wheel
    [sdist] = wheel.parent.glob("engram_memory_client-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    with tarfile.open(sdist) as archive:
        packed = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}

    wanted = {
        "engram_client/py.typed",
        "engram_client/client.py",
        "engram_client/langgraph.py",
        "engram_client/hooks/commands.py",
        "engram_client/hooks/handoff.py",
    }
    assert wanted <= names
    assert not any(name.startswith("app/") for name in names)
    assert "engram-hook = engram_client.hooks.commands:main" in scripts
    assert {"pyproject.toml", "README.md", *wanted} <= packed


def test_the_installed_client_brings_none_of_the_servers_packages(
    client_wheel_venv: ClientVenv,
) -> None:
    packages = installed(client_wheel_venv)

    assert {"engram-memory-client", "httpx", "pydantic"} <= packages
    assert "engram" not in packages
    assert not packages & set(SERVER_ONLY)


def test_engram_hook_runs_and_installs_entries_that_run_the_venvs_own_script(
    client_wheel_venv: ClientVenv, tmp_path: Path
) -> None:
    helped = client_wheel_venv.run("engram-hook", "--help", cwd=tmp_path)
    installed_hooks = client_wheel_venv.run(
        "engram-hook", "install", "--claude-code", cwd=tmp_path, HOME=str(tmp_path)
    )

    assert helped.returncode == 0 and "UserPromptSubmit" in helped.stdout, helped.stderr
    assert installed_hooks.returncode == 0, installed_hooks.stderr
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    [[group]] = [settings["hooks"]["UserPromptSubmit"]]
    assert shlex.split(group["hooks"][0]["command"]) == [
        str(client_wheel_venv.script("engram-hook")),
        "UserPromptSubmit",
    ]


async def test_the_installed_client_stores_an_episode_and_finds_it_on_a_live_engram(
    client_wheel_venv: ClientVenv, live_url: str, api_key_for: Any, tmp_path: Path
) -> None:
    key = await api_key_for("client-wheel")

    done = await asyncio.to_thread(
        client_wheel_venv.run, "python", "-c", STORE_AND_SEARCH, live_url, key, cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "Ann: the wheel venv keeps bees in Lyon"
