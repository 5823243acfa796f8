"""Facts as the API shows them."""

from datetime import datetime

from app.models import Fact
from app.responses.confidence import with_confidence
from app.schemas.facts import FactOut, FactPage
from app.services.facts import FactListing


def fact_out(
    row: Fact, now: datetime | None = None, period: tuple[datetime, datetime | None] | None = None
) -> FactOut:
    """A fact as the API shows it, with its decayed confidence and fading state; with
    `period`, the valid period it was believed to have at the read's known_at."""
    values = {**with_confidence(row, now), "fading": row.fading_since is not None}
    if period is not None:
        values["valid_from"], values["valid_until"] = period
    return FactOut.model_validate(values)


def fact_page_out(listing: FactListing) -> FactPage:
    """A page of facts, saying which point in time it was read at."""
    at = listing.at
    return FactPage(
        items=[fact_out(row, period=listing.periods.get(row.id)) for row in listing.rows],
        next_cursor=listing.next_cursor,
        as_of=None if at is None else at.as_of,
        known_at=None if at is None else at.known_at,
    )
