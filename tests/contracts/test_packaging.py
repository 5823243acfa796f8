"""A built wheel carries the Alembic revisions and migrates a database from its own copy; the
client (and the hooks `engram hook` runs) come from the engram-memory-client wheel beside it."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.database import scratch_database, scratch_server_url
from tests.support.paths import PYTHON_CLIENT, REPO_ROOT

SOURCE_REVISIONS = sorted(path.name for path in (REPO_ROOT / "alembic" / "versions").glob("*.py"))
# Run in the wheel's unpacked tree: app.postgres.migrations must find app/_alembic there, not the
# checkout's alembic/, and then bring an empty database to head.
MIGRATE_FROM_WHEEL = """
import sys
from pathlib import Path
import app, app.postgres.migrations
from app.cli import main
installed = Path(sys.argv[1]).resolve()
assert Path(app.__file__).resolve().is_relative_to(installed), app.__file__
import engram_client.hooks
assert Path(engram_client.hooks.__file__).resolve().is_relative_to(installed)
assert app.postgres.migrations.script_location() == installed / "app" / "_alembic"
print("script_location", app.postgres.migrations.script_location())
main(["migrate"])
"""


def build_wheels(into: Path) -> tuple[Path, Path]:
    """`pip wheel` of the server and of the client (no dependencies, no download)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(into),
            str(REPO_ROOT),
            str(PYTHON_CLIENT),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    [wheel] = into.glob("engram-*.whl")
    [client] = into.glob("engram_memory_client-*.whl")
    return wheel, client


async def test_wheel_ships_the_revisions_and_migrates_from_them(tmp_path):
    wheel, client = build_wheels(tmp_path / "dist")
    with zipfile.ZipFile(client) as archive:
        archive.extractall(tmp_path / "installed")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert not any(name.startswith("engram_client/") for name in names)
        assert {"app/_alembic/env.py", "app/_alembic/script.py.mako"} <= names
        shipped = sorted(
            name.rsplit("/", 1)[1]
            for name in names
            if name.startswith("app/_alembic/versions/") and name.endswith(".py")
        )
        assert shipped == SOURCE_REVISIONS
        # The web console's templates and stylesheet, so /ui works from the wheel.
        assert {
            "app/console/templates/base.html",
            "app/console/templates/memory.html",
            "app/console/static/console.css",
        } <= names
        installed = tmp_path / "installed"
        archive.extractall(installed)

    server_url = scratch_server_url(REPO_ROOT / ".pytest-pg")
    async with scratch_database(server_url, "engram_wheel") as url:
        env = {
            **os.environ,
            "PYTHONPATH": str(installed),
            "DATABASE_URL": url,
            "ENGRAM_DATA_DIR": str(tmp_path / "data"),
        }
        done = subprocess.run(
            [sys.executable, "-c", MIGRATE_FROM_WHEEL, str(installed)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert "database upgraded to head" in done.stdout
