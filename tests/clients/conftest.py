"""Fixtures of the client tests: one live server that the framework adapters' tests share."""

from collections.abc import Iterator

import pytest

from app.core.config import Settings
from app.main import create_app
from tests.support.live_server import serve_in_thread


@pytest.fixture(scope="session")
def live_url(settings: Settings) -> Iterator[str]:
    """A live server with authentication on (a module may serve one of its own instead)."""
    with serve_in_thread(create_app(settings)) as url:
        yield url
