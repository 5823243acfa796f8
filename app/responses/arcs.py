"""Arcs and arc search answers."""

from app.models import Arc
from app.responses.records import record_scores
from app.retrieval.records import RecordHit
from app.schemas.arcs import ArcOut, ArcSearchResponse


def arc_out(row: Arc) -> ArcOut:
    """An arc as the API shows it (no embedding)."""
    return ArcOut.model_validate(row)


def arc_search_out(mode: str, hits: list[RecordHit]) -> ArcSearchResponse:
    """The arc search answer: each arc with its scores."""
    return ArcSearchResponse.model_validate(
        {
            "mode": mode,
            "results": [{**dict(arc_out(hit.row)), **record_scores(hit)} for hit in hits],
        }
    )
