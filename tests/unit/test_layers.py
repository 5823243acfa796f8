"""The layer rules of ARCHITECTURE.md hold on every import in app/ (import-linter's
contracts in pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

import grimp

from tests.support.paths import REPO_ROOT


def test_every_layer_imports_only_what_it_may():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--no-cache"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_the_doors_reach_sql_only_through_services():
    graph = grimp.build_graph("app")
    doors = ("app.routers", "app.mcp", "app.console")
    direct = {
        (importer, imported)
        for door in doors
        for importer in graph.find_descendants(door)
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith("app.repositories")
    }
    assert not direct, sorted(direct)
