"""Provenance links as the API shows them."""

from app.models import MemoryLink
from app.schemas.links import LinkOut


def link_out(row: MemoryLink) -> LinkOut:
    """A link as the API shows it."""
    return LinkOut.model_validate(row)
