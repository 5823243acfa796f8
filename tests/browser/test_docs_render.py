"""/docs rendered by a real headless browser (Debian's chromium) with no internet: the
operations appear. Skipped where chromium is not installed (`apt-get install chromium`)."""

import shutil
import subprocess
import tempfile

import pytest

from app.main import create_app
from tests.support.live_server import serve_in_thread

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_swagger_ui_renders_the_operations_offline(settings):
    assert CHROMIUM is not None
    with serve_in_thread(create_app(settings)) as url, \
            tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-quic", f"--user-data-dir={profile}", "--virtual-time-budget=15000",
             "--dump-dom", f"{url}/docs"],
            capture_output=True, text=True, timeout=120, check=True).stdout
    assert 'class="swagger-ui' in dom
    assert "opblock" in dom
    for operation in ("Store an episode", "Hybrid, semantic or keyword search", "Create a run"):
        assert operation in dom, operation
