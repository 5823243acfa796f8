"""Ship the top-level alembic/ directory inside the wheel as app/_alembic (see pyproject.toml).

Everything else about the build is declared in pyproject.toml; this only adds the copy, so
a wheel or non-editable install can migrate (app/postgres/migrations.py looks there first).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MIGRATIONS_SOURCE = Path(__file__).resolve().parent / "alembic"


class BuildPyWithMigrations(build_py):
    """build_py that also copies alembic/ (env.py, script.py.mako, versions/) into the package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the source tree's alembic/
            return
        target = Path(self.build_lib) / "app" / "_alembic"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(
            MIGRATIONS_SOURCE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )


setup(cmdclass={"build_py": BuildPyWithMigrations})
