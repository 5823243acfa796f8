"""A hook starts without loading the service: it runs before every prompt of the agent."""

import subprocess
import sys

from tests.support.paths import REPO_ROOT


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
        env={"PATH": "/usr/bin:/bin", "ENGRAM_URL": "http://127.0.0.1:9"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1:] in ([""], []), done.stdout
