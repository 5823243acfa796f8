"""The tests are laid out to be found: each fixture is defined once, in the conftest.py of the
lowest folder holding all its users (or in its one user's module), every test module sits in a
folder named for what it tests, and what test modules share lives in tests/support/, never in
another test module."""

import ast
import os
from collections import defaultdict
from functools import cache
from pathlib import Path

from tests.support.paths import REPO_ROOT

TESTS = REPO_ROOT / "tests"
# Conftests copied into another project's test suite, whose fixture names that suite fixes.
PEER_CONFTESTS = ("*_peer_conftest.py",)


@cache
def _modules() -> dict[Path, ast.Module]:
    return {
        path: ast.parse(path.read_text(), str(path))
        for path in sorted(TESTS.rglob("*.py"))
        if not any(path.match(pattern) for pattern in PEER_CONFTESTS)
    }


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("pytest.fixture", "fixture")


def _fixture_name(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for decorator in function.decorator_list:
        if _is_fixture(decorator):
            for keyword in getattr(decorator, "keywords", []):
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
            return function.name
    return None


def test_no_fixture_is_defined_in_two_files() -> None:
    defined: dict[str, set[str]] = defaultdict(set)
    for path, module in _modules().items():
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if (name := _fixture_name(node)) is not None:
                    defined[name].add(str(path.relative_to(REPO_ROOT)))
    twice = {name: sorted(files) for name, files in defined.items() if len(files) > 1}
    assert not twice, f"define each in the conftest.py its users share: {twice}"


def _users() -> dict[str, set[Path]]:
    """The files asking for each name: parameters of tests and fixtures, usefixtures marks,
    getfixturevalue calls."""
    users: dict[str, set[Path]] = defaultdict(set)
    for path, module in _modules().items():
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test_") or _fixture_name(node) is not None:
                    for argument in node.args.args + node.args.kwonlyargs:
                        users[argument.arg].add(path)
            elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
                ("usefixtures", "getfixturevalue")
            ):
                for value in node.args:
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        users[value.value].add(path)
    return users


def test_each_fixture_lives_where_all_its_users_can_see_it_and_no_higher() -> None:
    users = _users()
    misplaced = []
    for path, module in _modules().items():
        for node in ast.walk(module):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if (name := _fixture_name(node)) is None or not users[name]:
                continue
            where = path.relative_to(REPO_ROOT)
            if path.name == "conftest.py":
                folder = Path(os.path.commonpath([user.parent for user in users[name]]))
                if folder != path.parent:
                    misplaced.append(f"{name} ({where}): {folder.relative_to(REPO_ROOT)}")
            elif users[name] != {path}:
                misplaced.append(f"{name} ({where}): a conftest.py over its users")
    assert not misplaced, f"move each to the conftest.py of its users' folder: {misplaced}"


def test_no_test_module_at_the_top_of_tests() -> None:
    loose = sorted(path.name for path in TESTS.glob("test_*.py"))
    assert not loose, f"move these into the folder of what they test: {loose}"


def test_every_test_folder_is_a_package() -> None:
    folders = {path.parent for path in TESTS.rglob("test_*.py")}
    bare = sorted(
        str(f.relative_to(REPO_ROOT)) for f in folders if not (f / "__init__.py").exists()
    )
    assert not bare, f"add an __init__.py to: {bare}"


def test_no_module_imports_a_test_module_or_a_conftest() -> None:
    imports = []
    for path, module in _modules().items():
        for node in ast.walk(module):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [("tests." if node.level else "") + node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                last = name.rsplit(".", 1)[-1]
                if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                    imports.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} {name}")
    assert not imports, f"move what is shared into tests/support/ or a conftest.py: {imports}"
