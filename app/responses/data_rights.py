"""Import counts, delete receipts and export pages."""

import uuid
from typing import Any

from app.schemas.data_rights import DeletedOut, ExportPageOut
from app.schemas.portability import ImportOut


def import_out(counts: dict[str, int]) -> ImportOut:
    """What an import inserted, per record kind."""
    return ImportOut(imported=counts)


def deleted_out(node_type: str, node_id: uuid.UUID, counts: dict[str, int]) -> DeletedOut:
    """The receipt of a hard delete."""
    return DeletedOut.model_validate({"type": node_type, "id": node_id, "deleted": counts})


def export_page_out(records: list[dict[str, Any]], next_offset: int | None) -> ExportPageOut:
    """A page of the export and the cursor of the next one."""
    return ExportPageOut(
        records=records, next_cursor=None if next_offset is None else str(next_offset)
    )
