"""The audit stream as the API shows it."""

import uuid
from typing import Any

from pydantic import Field

from app.schemas.common import IsoDatetime, ResponseModel


class EventOut(ResponseModel):
    """One audit event: what happened, who caused it, when."""

    id: uuid.UUID
    event_type: str
    actor: str | None = Field(
        description='"key:<id>" (a request), "anonymous" (authentication disabled), '
        '"job:<id>", or the process of a sweep ("decay_sweep", '
        '"episode_cleanup", "consolidation").'
    )
    actor_key_id: uuid.UUID | None = Field(
        description="The API key whose request, or whose enqueued job, caused the event; "
        "null for scheduled system jobs and with authentication disabled."
    )
    payload: dict[str, Any]
    created_at: IsoDatetime
