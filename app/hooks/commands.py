"""The `engram hook` and `engram hooks` commands."""

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any


def add_commands(commands: Any) -> None:
    """Add `hook` and `hooks` to the `engram` command's subparsers; each runs through its
    `handler` default, before the service's settings are read."""
    from app.hooks.config import EVENTS

    hook = commands.add_parser(
        "hook",
        help="answer a Claude Code hook event (JSON payload on stdin): SessionStart and "
        "UserPromptSubmit print memories, the others store the transcript",
    )
    hook.add_argument("event", choices=EVENTS)
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
    hooks = commands.add_parser(
        "hooks", help="add or remove Engram's hooks in a coding agent's settings"
    )
    actions = hooks.add_subparsers(dest="hooks_command", required=True)
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
        parser.set_defaults(handler=_install if action == "install" else _uninstall)


def _hook(args: argparse.Namespace) -> int:
    from app.hooks.config import HANDOFF_EVENTS, HookConfig

    config = HookConfig.from_env()
    if args.token_budget is not None and args.token_budget > 0:
        config = replace(config, token_budget=args.token_budget)
    if args.timeout is not None and args.timeout > 0:
        config = replace(config, timeout=args.timeout)
    if args.event in HANDOFF_EVENTS:
        # Only a detached process to start: nothing more is imported before it is.
        from app.hooks.handoff import run_handoff

        code = run_handoff(args.event, config, sys.stdin)
    else:
        from app.hooks.claude_code import run_hook

        code = run_hook(args.event, config, sys.stdin, sys.stdout)
    # The answer is out: end now rather than wait for a request still under way.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _path(args: argparse.Namespace) -> Path:
    from app.hooks.settings import settings_path

    return settings_path(args.user, Path.cwd(), Path.home())


def _record() -> Path:
    from app.hooks.config import state_dir
    from app.hooks.settings import RECORD_NAME

    return state_dir(dict(os.environ)) / RECORD_NAME


def _install(args: argparse.Namespace) -> int:
    from app.hooks.settings import SettingsError, engram_command, install

    path = _path(args)
    try:
        entries = install(path, engram_command(), _record())
    except SettingsError as error:
        raise SystemExit(f"engram hooks install: {error}") from None
    print(f"wrote Engram's hooks into {path}:")
    print(json.dumps({"hooks": entries}, indent=2))
    print(
        "The hooks reach Engram at ENGRAM_URL (default http://127.0.0.1:8000) with "
        "ENGRAM_API_KEY from the environment Claude Code runs in."
    )
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from app.hooks.settings import SettingsError, uninstall

    path = _path(args)
    try:
        removed, deleted = uninstall(path, _record())
    except SettingsError as error:
        raise SystemExit(f"engram hooks uninstall: {error}") from None
    print(f"removed {removed} Engram hook entr{'y' if removed == 1 else 'ies'} from {path}")
    if deleted:
        print(f"deleted {path}: install had created it and nothing else was left in it")
    return 0
