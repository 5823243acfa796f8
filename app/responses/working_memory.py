"""Working memories and scratchpad entries."""

from typing import Any

from app.models import WorkingMemory
from app.schemas.working_memory import ScratchpadEntry, WorkingMemoryOut
from app.services.working_memory import etag_of


def working_memory_out(row: WorkingMemory) -> WorkingMemoryOut:
    """A working memory as the API shows it, with its ETag."""
    return WorkingMemoryOut.model_validate(
        {
            "agent_id": row.agent_id,
            "session_id": row.session_id,
            "active_context": row.active_context,
            "scratchpad": row.scratchpad,
            "retrieved_memory_ids": row.retrieved_memory_ids,
            "decisions": row.decisions,
            "ttl_seconds": row.ttl_seconds,
            "version": row.version,
            "etag": etag_of(row),
            "created_at": row.created_at,
            "updated_at": row.updated_at,
            "expires_at": row.expires_at,
        }
    )


def scratchpad_entry_out(name: str, value: Any) -> ScratchpadEntry:
    """One scratchpad key and its value."""
    return ScratchpadEntry(key=name, value=value)
