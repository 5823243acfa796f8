"""`engram-hook install|uninstall --claude-code` (or `engram hooks ...`): Engram's entries in
a Claude Code settings.json, merged with what is there and removed exactly. A settings file (and its
`.claude` directory) that install created is noted, so uninstall deletes it again rather
than leave an empty `{}` where there was nothing."""

import contextlib
import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from engram_client.hooks.config import EVENTS

# Claude Code ends a hook after this many seconds; the hook's own deadline is shorter.
HOOK_TIMEOUT_SECONDS = 10
# A settings file can hold secrets under "env": a new one is readable by its owner only.
NEW_FILE_MODE = 0o600
# In the hooks' state directory: the settings files and directories install created.
RECORD_NAME = "installed-settings.json"


class SettingsError(Exception):
    """The settings file cannot be read as a JSON object."""


def settings_path(user: bool, project_dir: Path, home: Path) -> Path:
    """The user's ~/.claude/settings.json or the project's .claude/settings.json."""
    return (home if user else project_dir) / ".claude" / "settings.json"


def command_path(program: str) -> str:
    """How Claude Code should start `program` (`engram-hook` or `engram`): the running
    executable's absolute path when it is that script, else the one on PATH."""
    running = Path(sys.argv[0])
    if running.name == program and running.exists():
        return str(running.resolve())
    return shutil.which(program) or program


def hook_command(executable: str, event: str) -> str:
    """The command line of one hook entry: `<engram-hook> E`, or `<engram> hook E`."""
    if Path(executable).name == "engram-hook":
        return f"{shlex.quote(executable)} {event}"
    return f"{shlex.quote(executable)} hook {event}"


def is_ours(handler: object) -> bool:
    """Whether a hook handler is one install wrote (`<.../engram-hook> E` or
    `<.../engram> hook E`)."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return False
    if len(words) == 2:
        return Path(words[0]).name == "engram-hook" and words[1] in EVENTS
    return (
        len(words) == 3
        and Path(words[0]).name == "engram"
        and words[1] == "hook"
        and words[2] in EVENTS
    )


def read_settings(path: Path) -> dict[str, Any]:
    """The settings in `path` ({} when there is no file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        settings = json.loads(text) if text.strip() else {}
    except ValueError as error:
        raise SettingsError(f"{path} is not valid JSON ({error}); fix or move it first") from None
    if not isinstance(settings, dict) or not isinstance(settings.get("hooks", {}), dict):
        raise SettingsError(f"{path}: expected a JSON object with a 'hooks' object")
    _check_hooks(path, settings.get("hooks", {}))
    return settings


def _check_hooks(path: Path, hooks: dict[str, Any]) -> None:
    """Refuse what Claude Code would not read as hooks: each event a list of groups, each group
    an object whose 'hooks' is a list."""
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise SettingsError(
                f"{path}: hooks.{event} must be a list of hook groups "
                f'(like [{{"hooks": [...]}}]), not {_kind(groups)}; '
                f"fix it first, nothing was written"
            )
        for index, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise SettingsError(
                    f"{path}: hooks.{event}[{index}] must be an object whose "
                    f"'hooks' is a list; fix it first, nothing was written"
                )


def _kind(value: object) -> str:
    return {dict: "an object", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    """Write the file whole or not at all. A symlink is followed and its target rewritten in
    place (the link stays a link); the file keeps its mode, and a new one gets NEW_FILE_MODE."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    descriptor, partial = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".engram-tmp", dir=target.parent
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(json.dumps(settings, indent=2) + "\n")
            file.flush()
            os.fchmod(file.fileno(), mode)
            os.fsync(file.fileno())
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def without_ours(settings: dict[str, Any]) -> dict[str, Any]:
    """The settings with every Engram hook entry taken out (and groups, events and the hooks
    object that held nothing else)."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    kept_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept_hooks[event] = groups
            continue
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            handlers = [handler for handler in group["hooks"] if not is_ours(handler)]
            if handlers or not group["hooks"]:
                kept_groups.append({**group, "hooks": handlers})
        if kept_groups:
            kept_hooks[event] = kept_groups
    result = {key: value for key, value in settings.items() if key != "hooks"}
    if kept_hooks:
        result["hooks"] = kept_hooks
    return result


def our_entries(executable: str) -> dict[str, list[dict[str, Any]]]:
    """Engram's hook groups, one per event."""
    return {
        event: [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command(executable, event),
                        "timeout": HOOK_TIMEOUT_SECONDS,
                    }
                ]
            }
        ]
        for event in EVENTS
    }


def install(path: Path, executable: str, record: Path | None = None) -> dict[str, Any]:
    """Add Engram's entries to the settings at `path` (replacing any it wrote before);
    returns the entries. When the file (or its directory) is new, `record` notes it."""
    settings = without_ours(read_settings(path))
    created = [
        candidate
        for candidate in (path.parent, path)
        if not candidate.exists() and not candidate.is_symlink()
    ]
    entries = our_entries(executable)
    hooks = dict(settings.get("hooks", {}))
    for event, groups in entries.items():
        hooks[event] = [*hooks.get(event, []), *groups]
    write_settings(path, {**settings, "hooks": hooks})
    if record is not None and created:
        _note_created(record, [*_created(record), *(str(item.absolute()) for item in created)])
    return entries


def uninstall(path: Path, record: Path | None = None) -> tuple[int, bool]:
    """Remove Engram's entries from the settings at `path`: how many were removed, and
    whether the file went too (install had created it and nothing else is left in it)."""
    if not path.exists():
        return 0, False
    settings = read_settings(path)
    before = _count_ours(settings)
    left = without_ours(settings)
    created = _created(record) if record is not None else []
    mine = str(path.absolute()) in created
    if mine and not left:
        path.unlink()
        if str(path.parent.absolute()) in created:
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when empty
    elif before:
        write_settings(path, left)
    if record is not None and mine:
        noted = (str(path.absolute()), str(path.parent.absolute()))
        _note_created(record, [item for item in created if item not in noted])
    return before, mine and not left


def _created(record: Path) -> list[str]:
    """The paths the record holds (none when it is missing or unreadable)."""
    try:
        paths = json.loads(record.read_text(encoding="utf-8")).get("created", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [str(item) for item in paths if isinstance(item, str)]


def _note_created(record: Path, paths: list[str]) -> None:
    """Write the record (best effort: without it, uninstall leaves an empty file)."""
    try:
        record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = record.with_suffix(".tmp")
        partial.write_text(json.dumps({"created": sorted(set(paths))}), encoding="utf-8")
        os.replace(partial, record)
    except OSError as error:
        sys.stderr.write(f"engram hooks: could not note {record}: {error}\n")


def _count_ours(settings: dict[str, Any]) -> int:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    return sum(
        1
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for handler in group["hooks"]
        if is_ours(handler)
    )
