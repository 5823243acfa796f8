"""The hooks stay a light HTTP client: engram_client/hooks imports the standard library,
httpx and itself, nothing else (not the client's models, not the server)."""

import ast
import sys
from pathlib import Path

from tests.support.paths import PYTHON_CLIENT

HOOKS = PYTHON_CLIENT / "engram_client" / "hooks"


def imported(path: Path) -> set[str]:
    """The top-level names of the modules a file imports (relative imports as `.`)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." if node.level else str(node.module))
    return names


def test_the_hooks_import_only_the_standard_library_httpx_and_itself() -> None:
    foreign = {
        f"{path.name}: {name}"
        for path in sorted(HOOKS.glob("*.py"))
        for name in imported(path)
        if name != "."
        and name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] != "httpx"
        and not name.startswith("engram_client.hooks")
    }

    assert not foreign
