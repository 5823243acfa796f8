"""/docs rendered by a real headless browser (Debian's chromium) with no internet: the
operations appear. Skipped where chromium is not installed (`apt-get install chromium`)."""

import subprocess
import tempfile

from app.main import create_app
from tests.support.browser import CHROMIUM, CHROMIUM_PROGRAM
from tests.support.live_server import serve_in_thread
from tests.support.tools import needs


@needs(CHROMIUM_PROGRAM, install="apt-get install chromium")
def test_swagger_ui_renders_the_operations_offline(settings):
    assert CHROMIUM is not None
    with serve_in_thread(create_app(settings)) as url, tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-quic",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=15000",
                "--dump-dom",
                f"{url}/docs",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    assert 'class="swagger-ui' in dom
    assert "opblock" in dom
    for operation in ("Store an episode", "Hybrid, semantic or keyword search", "Create a run"):
        assert operation in dom, operation
