"""Debian's headless chromium driven by Selenium through Debian's chromedriver, offline.

Selenium Manager never runs: the driver and the browser are given by path.
"""

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.tools import found

CHROMIUM_PROGRAM = "chromium|chromium-browser"
CHROMIUM = found(CHROMIUM_PROGRAM)
CHROMEDRIVER = found("chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


@contextmanager
def chromium(width: int = 1280, height: int = 800) -> Iterator["object"]:
    """A fresh headless chromium (own profile) whose console log can be read."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM is not None and CHROMEDRIVER is not None
    with tempfile.TemporaryDirectory() as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={Path(profile)}")
        options.add_argument(f"--window-size={width},{height}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
        try:
            # A headless window is at least 500 px wide: narrower screens are emulated.
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
            )
            yield driver
        finally:
            driver.quit()
