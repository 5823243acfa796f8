"""Fixtures of the graph tests."""

from typing import Any

import pytest


@pytest.fixture
def no_automatic_links(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every link is made by the test itself: no related_to or mentions links on writes."""
    monkeypatch.setattr(app.state.settings.auto_links, "enabled", False)
    monkeypatch.setattr(app.state.settings.auto_links, "mentions", False)
