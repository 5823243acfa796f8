"""`engram hooks install|uninstall --claude-code`: Engram's entries merged into a Claude Code
settings.json and taken out again, leaving everything else as it was."""

import json
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.support.hooks import THEIRS, engram

EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]


def engram_commands(settings: dict[str, Any]) -> dict[str, list[list[str]]]:
    """The `engram hook` command lines per event."""
    return {
        event: [
            shlex.split(handler["command"])[1:]
            for group in groups
            for handler in group["hooks"]
            if "engram" in handler["command"]
        ]
        for event, groups in settings.get("hooks", {}).items()
    }


def test_install_merges_into_the_projects_settings_once_and_uninstall_restores_them(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    home.mkdir()
    path = project / ".claude" / "settings.json"
    path.write_text(json.dumps(THEIRS))

    installed = engram("hooks", "install", "--claude-code", "--project", cwd=project, home=home)
    first = json.loads(path.read_text())
    again = engram("hooks", "install", "--claude-code", cwd=project, home=home)

    assert installed.returncode == again.returncode == 0, installed.stderr + again.stderr
    assert str(path) in installed.stdout and "UserPromptSubmit" in installed.stdout
    assert json.loads(path.read_text()) == first
    assert engram_commands(first) == {
        "Stop": [["hook", "Stop"]],
        "PreToolUse": [],
        "SessionStart": [["hook", "SessionStart"]],
        "UserPromptSubmit": [["hook", "UserPromptSubmit"]],
        "PreCompact": [["hook", "PreCompact"]],
        "SessionEnd": [["hook", "SessionEnd"]],
    }
    assert first["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    assert first["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert (first["model"], first["permissions"]) == (THEIRS["model"], THEIRS["permissions"])
    command = first["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert Path(shlex.split(command["command"])[0]).name == "engram"
    assert command["type"] == "command" and command["timeout"] > 3
    assert not (home / ".claude").exists()

    removed = engram("hooks", "uninstall", "--claude-code", cwd=project, home=home)

    assert removed.returncode == 0 and "removed 5" in removed.stdout
    assert json.loads(path.read_text()) == THEIRS


def test_user_install_writes_the_home_settings_and_uninstall_deletes_the_file_it_created(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()

    installed = engram("hooks", "install", "--claude-code", "--user", cwd=tmp_path, home=home)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    removed = engram("hooks", "uninstall", "--claude-code", "--user", cwd=tmp_path, home=home)

    assert installed.returncode == removed.returncode == 0
    assert sorted(settings["hooks"]) == sorted(EVENTS)
    assert not (home / ".claude").exists()
    assert not (tmp_path / ".claude").exists()


def test_install_refuses_a_settings_file_that_is_not_json(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.json"
    path.write_text("{ not json")

    refused = engram("hooks", "install", "--claude-code", cwd=tmp_path, home=tmp_path)

    assert refused.returncode != 0 and "not valid JSON" in refused.stderr
    assert path.read_text() == "{ not json"


MINE = {**THEIRS, "env": {"ANTHROPIC_API_KEY": "sk-ant-secret"}}


def dotfiles_link(tmp_path: Path, settings: dict[str, Any]) -> tuple[Path, Path, Path]:
    """(home, the link ~/.claude/settings.json, its 0600 target in a dotfiles directory)."""
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles"
    (home / ".claude").mkdir(parents=True)
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(json.dumps(settings))
    target.chmod(0o600)
    link = home / ".claude" / "settings.json"
    link.symlink_to(target)
    return home, link, target


def test_install_rewrites_a_symlinked_settings_files_target_keeping_its_mode(
    tmp_path: Path,
) -> None:
    home, link, target = dotfiles_link(tmp_path, MINE)

    installed = engram("hooks", "install", "--claude-code", "--user", cwd=tmp_path, home=home)

    assert installed.returncode == 0, installed.stderr
    assert link.is_symlink() and link.resolve() == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    written = json.loads(target.read_text())
    assert written["env"] == MINE["env"]
    assert engram_commands(written)["UserPromptSubmit"] == [["hook", "UserPromptSubmit"]]
    assert [path.name for path in target.parent.iterdir()] == [target.name]


def test_uninstall_rewrites_a_symlinked_settings_files_target_keeping_its_mode(
    tmp_path: Path,
) -> None:
    ours = {
        event: [
            {
                "hooks": [
                    {"type": "command", "command": f"/opt/bin/engram hook {event}", "timeout": 10}
                ]
            }
        ]
        for event in EVENTS
    }
    hooks = {**THEIRS["hooks"], **ours}
    hooks["Stop"] = [*THEIRS["hooks"]["Stop"], *ours["Stop"]]
    home, link, target = dotfiles_link(tmp_path, {**MINE, "hooks": hooks})

    removed = engram("hooks", "uninstall", "--claude-code", "--user", cwd=tmp_path, home=home)

    assert removed.returncode == 0 and "removed 5" in removed.stdout, removed.stderr
    assert link.is_symlink() and link.resolve() == target
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert json.loads(target.read_text()) == MINE
    assert [path.name for path in target.parent.iterdir()] == [target.name]


def test_a_new_settings_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    installed = engram("hooks", "install", "--claude-code", cwd=tmp_path, home=tmp_path)

    assert installed.returncode == 0, installed.stderr
    assert stat.S_IMODE((tmp_path / ".claude" / "settings.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("action", ["install", "uninstall"])
@pytest.mark.parametrize(
    ("hooks", "named"),
    [
        ({"Stop": "echo hi"}, "hooks.Stop must be a list"),
        ({"PreToolUse": {"command": "x"}}, "hooks.PreToolUse must be a list"),
        ({"Stop": [{"hooks": "echo hi"}]}, "hooks.Stop[0] must be an object"),
        ({"Stop": ["echo hi"]}, "hooks.Stop[0] must be an object"),
    ],
)
def test_hooks_that_are_not_lists_are_refused_and_nothing_is_written(
    tmp_path: Path, action: str, hooks: dict[str, Any], named: str
) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.json"
    text = json.dumps(
        {
            "model": "opus",
            "hooks": {
                **hooks,
                "SessionEnd": [
                    {"hooks": [{"type": "command", "command": "/opt/bin/engram hook SessionEnd"}]}
                ],
            },
        }
    )
    path.write_text(text)

    refused = engram("hooks", action, "--claude-code", cwd=tmp_path, home=tmp_path)

    assert refused.returncode != 0 and named in refused.stderr, refused.stderr
    assert path.read_text() == text
    assert sorted(file.name for file in path.parent.iterdir()) == ["settings.json"]
