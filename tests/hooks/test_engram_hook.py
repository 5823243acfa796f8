"""`engram-hook`, the client's command: the same hooks as `engram hook`, installed as
`<engram-hook> <event>` entries that either command's uninstall takes out."""

import json
import shlex
from pathlib import Path

from tests.support.hooks import THEIRS, engram, engram_hook, hook_env

EVENTS = ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"]


def ours(settings: dict) -> dict[str, list[list[str]]]:
    """The Engram command lines per event, the executable as its name."""
    return {
        event: [
            [Path(words[0]).name, *words[1:]]
            for group in groups
            for handler in group["hooks"]
            if "engram" in (words := shlex.split(handler["command"]))[0]
        ]
        for event, groups in settings.get("hooks", {}).items()
        if event in EVENTS
    }


def test_engram_hook_install_writes_its_own_entries_once_and_uninstall_restores_the_file(
    tmp_path: Path,
) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.json"
    path.write_text(json.dumps(THEIRS))

    installed = engram_hook("install", "--claude-code", cwd=tmp_path, home=tmp_path)
    first = json.loads(path.read_text())
    again = engram_hook("install", "--claude-code", cwd=tmp_path, home=tmp_path)

    assert installed.returncode == again.returncode == 0, installed.stderr + again.stderr
    assert json.loads(path.read_text()) == first
    assert ours(first) == {event: [["engram-hook", event]] for event in EVENTS}
    assert first["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]

    removed = engram_hook("uninstall", "--claude-code", cwd=tmp_path, home=tmp_path)

    assert removed.returncode == 0 and "removed 5" in removed.stdout, removed.stderr
    assert json.loads(path.read_text()) == THEIRS


def test_either_command_replaces_and_removes_the_others_entries(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude" / "settings.json"
    path.write_text(json.dumps(THEIRS))

    engram("hooks", "install", "--claude-code", cwd=tmp_path, home=tmp_path)
    engram_hook("install", "--claude-code", cwd=tmp_path, home=tmp_path)
    replaced = json.loads(path.read_text())
    removed = engram("hooks", "uninstall", "--claude-code", cwd=tmp_path, home=tmp_path)

    assert ours(replaced) == {event: [["engram-hook", event]] for event in EVENTS}
    assert removed.returncode == 0 and "removed 5" in removed.stdout, removed.stderr
    assert json.loads(path.read_text()) == THEIRS


def test_engram_hook_with_engram_down_prints_nothing_and_lets_the_prompt_go_on(
    tmp_path: Path,
) -> None:
    env = hook_env(tmp_path, "http://127.0.0.1:9")
    prompt = json.dumps(
        {"session_id": "s", "cwd": str(tmp_path), "prompt": "where is the staging database?"}
    )

    done = engram_hook("UserPromptSubmit", cwd=tmp_path, home=tmp_path, stdin=prompt, env=env)

    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr.startswith("engram hook:"), done.stderr
