"""Facts as the API shows them."""

from datetime import datetime

from app.models import Fact
from app.schemas.facts import FactOut
from app.services.responses.confidence import with_confidence


def fact_out(row: Fact, now: datetime | None = None) -> FactOut:
    """A fact as the API shows it, with its decayed confidence and fading state."""
    return FactOut.model_validate({**with_confidence(row, now),
                                   "fading": row.fading_since is not None})
