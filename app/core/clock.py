"""The service's clock: the one place that reads the current time in Python."""

from datetime import UTC, datetime


def now_utc() -> datetime:
    """The current time, timezone-aware."""
    return datetime.now(UTC)
