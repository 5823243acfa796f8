"""Editing a fact's or rule's labels: its tags and metadata, replaced as a whole."""

from pydantic import Field

from app.schemas.common import MemoryMetadata, RequestModel, Tags


class LabelsUpdate(RequestModel):
    """The new tags and metadata (each replaces the old one entirely)."""

    tags: Tags = Field(default_factory=list)
    metadata: MemoryMetadata = Field(default_factory=dict)
