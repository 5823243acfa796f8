"""`engram backup` and `engram restore` on the embedded PostgreSQL: a restored service's export
equals the export taken at the chosen time, and at the latest archived state."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.core.config import BackupSettings, JobSettings, Settings
from app.core.scope import SYSTEM, scoped_transaction
from app.main import create_app
from app.services import api_keys
from tests.support.every_kind import plant_every_kind
from tests.support.factories import store_episode, store_fact
from tests.support.paths import REPO_ROOT

MARKER = "5550123"


def _records(body: str) -> list[dict[str, Any]]:
    """An export's records in a stable order (as the export round-trip test compares them)."""
    return sorted(
        (json.loads(line) for line in body.splitlines()),
        key=lambda r: (r["kind"], json.dumps(r, sort_keys=True)),
    )


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory the embedded server's OS user can reach (pytest keeps its own temporary
    directories private to the user running it), removed afterwards."""
    parent = REPO_ROOT / ".pytest-backups"
    parent.mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home(scratch: Path) -> Path:
    """Data dirs, backups and the WAL archive; the exported model is shared."""
    models = Settings().resolved_data_dir / "models"
    for name in ("live", "at_time", "latest"):
        (scratch / name).mkdir()
        if models.exists():
            (scratch / name / "models").symlink_to(models)
    return scratch


def _settings(data_dir: Path, archive: Path | None = None) -> Settings:
    return Settings(
        database_url=None,
        app_database_url=None,
        data_dir=data_dir,
        backup=BackupSettings(wal_archive_dir=archive),
        jobs=JobSettings(worker_enabled=False, scheduler_enabled=False),
    )


@asynccontextmanager
async def _service(
    settings: Settings, key: str | None = None
) -> AsyncIterator[tuple[Any, httpx.AsyncClient, str]]:
    """The app on the embedded server of `settings`, a client with `key` (else a new key's)."""
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        if key is None:
            async with scoped_transaction(application.state.sessionmaker, SYSTEM) as session:
                key = (await api_keys.create_key(session, tenant_id="default")).secret
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application),
            base_url="http://engram.test",
            headers={"Authorization": f"Bearer {key}"},
        ) as client:
            yield application, client, key


def _engram(
    data_dir: Path, *args: str, archive: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `engram` command on the embedded server of `data_dir`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name
        not in (
            "DATABASE_URL",
            "ENGRAM_DATABASE_URL",
            "ENGRAM_APP_DATABASE_URL",
            "ENGRAM_BACKUP__WAL_ARCHIVE_DIR",
        )
    }
    env.update(ENGRAM_DATA_DIR=str(data_dir), ENGRAM_CONFIG=str(data_dir / "none.toml"))
    if archive is not None:
        env["ENGRAM_BACKUP__WAL_ARCHIVE_DIR"] = str(archive)
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


async def _archive_everything(application: Any) -> None:
    """Close the current WAL segment and wait until the server has archived it."""
    async with application.state.owner_engine.connect() as conn:
        segment = (await conn.execute(text("SELECT pg_walfile_name(pg_switch_wal())"))).scalar_one()
        await conn.commit()
        for _ in range(300):
            archived = (
                await conn.execute(
                    text("SELECT coalesce(last_archived_wal, '') FROM pg_stat_archiver")
                )
            ).scalar_one()
            await conn.commit()
            if archived >= segment:
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"WAL segment {segment} was not archived")


async def _export(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    response = await client.get("/v1/export")
    assert response.status_code == 200, response.text
    return _records(response.text)


async def test_restores_to_a_point_in_time_and_to_the_latest_state(home: Path) -> None:
    # Quotes, a space and a percent sign: the archive and restore commands must escape them.
    archive, backups = home / "Ann's WAL 100%", home / "backups"
    async with _service(_settings(home / "live", archive)) as (live, client, key):
        await plant_every_kind(client, live, live.state.settings, MARKER)
        made = await asyncio.to_thread(
            _engram, home / "live", "backup", str(backups), archive=archive
        )
        assert made.returncode == 0, made.stderr
        assert f"WAL archived in {archive}" in made.stdout
        before_backup = datetime.now(UTC) - timedelta(minutes=1)

        await store_episode(client, f"After the backup Ann called {MARKER} again")
        kept = await store_fact(
            client, subject="Ann", predicate="city", content="Ann lives in Lyon"
        )
        await asyncio.sleep(0.5)
        noted = datetime.now(UTC)
        await asyncio.sleep(0.5)
        at_noted = await _export(client)

        await store_episode(client, "Later still, Ann moved to Porto")
        deleted = await client.delete(f"/v1/facts/{kept['id']}")
        assert deleted.status_code == 204, deleted.text
        await _archive_everything(live)
        latest = await _export(client)
        assert latest != at_noted

        # A copy restored beside the live service, even with the service's own archive
        # setting, writes nothing into the live archive: the next restore to the latest
        # state still finds only the live timeline there.
        restored = await asyncio.to_thread(
            _engram,
            home / "at_time",
            "restore",
            str(backups),
            "--to",
            noted.isoformat(),
            archive=archive,
        )
        assert restored.returncode == 0, restored.stderr
        assert [
            path.name for path in archive.iterdir() if path.name.endswith((".history", ".partial"))
        ] == []
        restored = await asyncio.to_thread(_engram, home / "latest", "restore", str(backups))
        assert restored.returncode == 0, restored.stderr

        refused = await asyncio.to_thread(_engram, home / "live", "restore", str(backups))
        assert refused.returncode != 0 and "is not empty" in refused.stderr
        too_early = await asyncio.to_thread(
            _engram,
            home / "at_time",
            "restore",
            str(backups),
            "--pgdata",
            str(home / "never"),
            "--to",
            before_backup.isoformat(),
        )
        assert too_early.returncode != 0
        assert "before the earliest base backup" in too_early.stderr
        assert not (home / "never").exists()
        missing = await asyncio.to_thread(
            _engram,
            home / "at_time",
            "restore",
            str(home / "no-backups"),
            "--pgdata",
            str(home / "never"),
        )
        assert missing.returncode != 0 and "no backup directory" in missing.stderr
        # Nothing was written after this time, so the archive cannot show its state yet.
        unseen = await asyncio.to_thread(
            _engram,
            home / "at_time",
            "restore",
            str(backups),
            "--pgdata",
            str(home / "never"),
            "--to",
            datetime.now(UTC).isoformat(),
        )
        assert unseen.returncode != 0
        assert "the WAL archive holds no change after" in unseen.stderr
        assert not (home / "never").exists()

    # Served as the live service (with the archive), the restored copy archives its new
    # timeline's history, so a later restore follows it.
    async with _service(_settings(home / "at_time", archive), key) as (_, client, _):
        assert await _export(client) == at_noted
        history = archive / "00000002.history"
        for _ in range(300):
            if history.exists():
                break
            await asyncio.sleep(0.1)
        assert history.exists(), sorted(path.name for path in archive.iterdir())
    async with _service(_settings(home / "latest"), key) as (_, client, _):
        assert await _export(client) == latest


def test_keep_deletes_older_base_backups_and_the_wal_only_they_needed(scratch: Path) -> None:
    archive, backups = scratch / "wal", scratch / "backups"
    for _ in range(2):
        made = _engram(scratch / "data", "backup", str(backups), archive=archive)
        assert made.returncode == 0, made.stderr
    first, second = sorted(backups.iterdir())
    segments = sorted(path.name for path in archive.iterdir())
    needed = json.loads((second / "engram-backup.json").read_text())["start_wal_file"]
    assert any(name < needed for name in segments)

    pruned = _engram(scratch / "data", "backup", str(backups), "--keep", "2", archive=archive)

    assert pruned.returncode == 0, pruned.stderr
    assert f"removed {first}" in pruned.stdout
    kept = sorted(backups.iterdir())
    assert first not in kept and second in kept and len(kept) == 2
    assert all(
        name >= needed
        for name in (path.name for path in archive.iterdir())
        if not name.endswith(".history")
    )
