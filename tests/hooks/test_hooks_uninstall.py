"""`engram hooks uninstall` leaves a settings file as install found it: a file install
created goes again, a file that was there stays, even an empty one."""

import json
from pathlib import Path

from tests.support.hooks import THEIRS, engram


def test_a_project_settings_file_install_created_is_deleted_with_its_directory(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()

    engram("hooks", "install", "--claude-code", cwd=project, home=home)
    engram("hooks", "install", "--claude-code", cwd=project, home=home)  # again: no change
    removed = engram("hooks", "uninstall", "--claude-code", cwd=project, home=home)

    assert removed.returncode == 0, removed.stderr
    assert "removed 5" in removed.stdout and "deleted" in removed.stdout
    assert list(project.iterdir()) == []


def test_a_settings_file_that_was_there_stays_even_when_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "keep.md").write_text("mine")
    path = home / ".claude" / "settings.json"
    path.write_text("{}")

    engram("hooks", "install", "--claude-code", "--user", cwd=tmp_path, home=home)
    removed = engram("hooks", "uninstall", "--claude-code", "--user", cwd=tmp_path, home=home)

    assert removed.returncode == 0 and "deleted" not in removed.stdout
    assert json.loads(path.read_text()) == {}


def test_a_created_file_that_gained_settings_of_yours_stays(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    path = home / ".claude" / "settings.json"

    engram("hooks", "install", "--claude-code", "--user", cwd=tmp_path, home=home)
    path.write_text(json.dumps({**json.loads(path.read_text()), "model": THEIRS["model"]}))
    engram("hooks", "uninstall", "--claude-code", "--user", cwd=tmp_path, home=home)
    engram("hooks", "install", "--claude-code", "--user", cwd=tmp_path, home=home)
    engram("hooks", "uninstall", "--claude-code", "--user", cwd=tmp_path, home=home)

    assert json.loads(path.read_text()) == {"model": THEIRS["model"]}
