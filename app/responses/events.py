"""Audit events as the API shows them."""

from app.models import MemoryEvent
from app.schemas.events import EventOut


def event_out(row: MemoryEvent) -> EventOut:
    """An audit event as the API shows it."""
    return EventOut.model_validate(row)
