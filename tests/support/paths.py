"""Where the repository is, for tests that read its files or run its commands."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# The engram-memory-client distribution: the Python client and Claude Code's hooks.
PYTHON_CLIENT = REPO_ROOT / "clients" / "python"
# A subprocess's PYTHONPATH that runs the checkout's server and client code.
SOURCE_PATH = os.pathsep.join((str(REPO_ROOT), str(PYTHON_CLIENT)))
