"""The hook commands: `engram-hook <event>` and `engram-hook install|uninstall`, and the same
as `engram hook <event>` and `engram hooks install|uninstall` in the server's command."""

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `engram-hook` console script."""
    from engram_client.hooks.config import EVENTS

    parser = argparse.ArgumentParser(
        prog="engram-hook",
        description="Give Claude Code the memory of a running Engram (ENGRAM_URL, "
        "ENGRAM_API_KEY): answer a hook event, or add or remove the hooks in its settings.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for event in EVENTS:
        _hook_arguments(commands.add_parser(event, help=f"answer Claude Code's {event} event"))
        commands.choices[event].set_defaults(event=event)
    _install_commands(commands, "engram-hook")
    args = parser.parse_args(argv)
    raise SystemExit(args.handler(args))


def add_commands(commands: Any) -> None:
    """Add `hook` and `hooks` to the `engram` command's subparsers; each runs through its
    `handler` default, before the service's settings are read."""
    from engram_client.hooks.config import EVENTS

    hook = commands.add_parser(
        "hook",
        help="answer a Claude Code hook event (JSON payload on stdin): SessionStart and "
        "UserPromptSubmit print memories, the others store the transcript",
    )
    hook.add_argument("event", choices=EVENTS)
    _hook_arguments(hook)
    hooks = commands.add_parser(
        "hooks", help="add or remove Engram's hooks in a coding agent's settings"
    )
    _install_commands(hooks.add_subparsers(dest="hooks_command", required=True), "engram")


def _hook_arguments(hook: argparse.ArgumentParser) -> None:
    hook.add_argument(
        "--token-budget",
        type=int,
        metavar="N",
        help="the memory block's size in tokens (default: ENGRAM_HOOK_TOKEN_BUDGET, else 1500)",
    )
    hook.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="the most the hook may take (default: ENGRAM_HOOK_TIMEOUT, else 3)",
    )
    hook.set_defaults(handler=_hook)


def _install_commands(actions: Any, program: str) -> None:
    """`install` and `uninstall`; the entries they write run `program`."""
    for action, help_text in (
        ("install", "add Engram's hook entries (idempotent)"),
        ("uninstall", "remove exactly Engram's hook entries"),
    ):
        parser = actions.add_parser(action, help=help_text)
        parser.add_argument(
            "--claude-code", action="store_true", required=True, help="Claude Code's settings.json"
        )
        where = parser.add_mutually_exclusive_group()
        where.add_argument(
            "--project",
            action="store_true",
            help="this directory's .claude/settings.json (the default)",
        )
        where.add_argument("--user", action="store_true", help="~/.claude/settings.json")
        parser.set_defaults(
            handler=_install if action == "install" else _uninstall, program=program
        )


def _hook(args: argparse.Namespace) -> int:
    from engram_client.hooks.config import HANDOFF_EVENTS, HookConfig

    config = HookConfig.from_env()
    if args.token_budget is not None and args.token_budget > 0:
        config = replace(config, token_budget=args.token_budget)
    if args.timeout is not None and args.timeout > 0:
        config = replace(config, timeout=args.timeout)
    if args.event in HANDOFF_EVENTS:
        # Only a detached process to start: nothing more is imported before it is.
        from engram_client.hooks.handoff import run_handoff

        code = run_handoff(args.event, config, sys.stdin)
    else:
        from engram_client.hooks.claude_code import run_hook

        code = run_hook(args.event, config, sys.stdin, sys.stdout)
    # The answer is out: end now rather than wait for a request still under way.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _path(args: argparse.Namespace) -> Path:
    from engram_client.hooks.settings import settings_path

    return settings_path(args.user, Path.cwd(), Path.home())


def _record() -> Path:
    from engram_client.hooks.config import state_dir
    from engram_client.hooks.settings import RECORD_NAME

    return state_dir(dict(os.environ)) / RECORD_NAME


def _said(program: str, action: str) -> str:
    return f"engram-hook {action}" if program == "engram-hook" else f"engram hooks {action}"


def _install(args: argparse.Namespace) -> int:
    from engram_client.hooks.settings import SettingsError, command_path, install

    path = _path(args)
    try:
        entries = install(path, command_path(args.program), _record())
    except SettingsError as error:
        raise SystemExit(f"{_said(args.program, 'install')}: {error}") from None
    print(f"wrote Engram's hooks into {path}:")
    print(json.dumps({"hooks": entries}, indent=2))
    print(
        "The hooks reach Engram at ENGRAM_URL (default http://127.0.0.1:8000) with "
        "ENGRAM_API_KEY from the environment Claude Code runs in."
    )
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from engram_client.hooks.settings import SettingsError, uninstall

    path = _path(args)
    try:
        removed, deleted = uninstall(path, _record())
    except SettingsError as error:
        raise SystemExit(f"{_said(args.program, 'uninstall')}: {error}") from None
    print(f"removed {removed} Engram hook entr{'y' if removed == 1 else 'ies'} from {path}")
    if deleted:
        print(f"deleted {path}: install had created it and nothing else was left in it")
    return 0
