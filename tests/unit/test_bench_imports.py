"""Every benchmark module imports against today's app/, and importing one runs nothing."""

import ast
import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

import pytest

import bench

MODULES = sorted(info.name for info in pkgutil.walk_packages(bench.__path__, "bench."))
OURS = {"app", "bench", "tests"}


def our_imports(name: str) -> list[tuple[str, str | None]]:
    """The (module, name) pairs a benchmark imports from this repository, those inside
    functions too, which only run when the benchmark does."""
    origin = importlib.util.find_spec(name).origin
    pairs: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(Path(origin).read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            pairs += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            pairs += [(alias.name, None) for alias in node.names]
    return [(module, attr) for module, attr in pairs if module.split(".")[0] in OURS]


def test_the_benchmarks_are_found():
    assert {
        "bench.common.texts",
        "bench.quality.locomo_recall",
        "bench.speed.endpoints",
        "bench.study.rank_study",
    } <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_a_benchmark_module_imports_without_touching_sys_path(name):
    before = list(sys.path)
    importlib.import_module(name)
    assert sys.path == before


@pytest.mark.parametrize("name", MODULES)
def test_what_a_benchmark_imports_inside_its_functions_still_exists(name):
    missing = []
    for module, attr in our_imports(name):
        imported = importlib.import_module(module)
        if attr is not None and not hasattr(imported, attr):
            try:
                importlib.import_module(f"{module}.{attr}")
            except ModuleNotFoundError:
                missing.append(f"{module}.{attr}")
    assert not missing
