"""A hook starts without loading the service: it runs before every prompt of the agent."""

import subprocess
import sys

from tests.support.paths import REPO_ROOT, SOURCE_PATH


def test_the_hook_command_loads_neither_the_web_stack_nor_the_database_driver():
    probe = (
        "import sys\nfrom app.cli import main\n"
        "try:\n    main(['hook', 'UserPromptSubmit'])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('fastapi', 'sqlalchemy', 'asyncpg', 'torch', "
        "'pydantic_settings') if m in sys.modules)\nprint(','.join(heavy))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": SOURCE_PATH,
            "ENGRAM_URL": "http://127.0.0.1:9",
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1:] in ([""], []), done.stdout


def test_the_hook_modules_load_neither_pydantic_nor_the_service():
    probe = (
        "import sys, app.cli, engram_client.hooks.commands, engram_client.hooks.claude_code, "
        "engram_client.hooks.handoff\n"
        "heavy = sorted(m for m in ('pydantic', 'fastapi', 'sqlalchemy', 'asyncpg', 'torch') "
        "if m in sys.modules)\nprint(','.join(heavy) or 'none')"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": SOURCE_PATH},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "none"
