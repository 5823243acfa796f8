"""The house stays readable: short functions, a short front page and architecture map, a
services floor that holds workflows only."""

import ast

from tests.support.paths import REPO_ROOT

APP = REPO_ROOT / "app"


def test_no_function_in_the_app_is_longer_than_80_lines():
    long = []
    for path in APP.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    long.append(
                        f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.name} ({lines} lines)"
                    )
    assert not long, long


def test_the_readme_fits_in_200_lines():
    assert len((REPO_ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_architecture_map_fits_in_120_lines():
    assert len((REPO_ROOT / "ARCHITECTURE.md").read_text().splitlines()) <= 120


def test_services_holds_at_most_45_modules():
    assert len(list((APP / "services").rglob("*.py"))) <= 45
