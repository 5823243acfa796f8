"""Procedures and procedure search answers."""

from app.models import Procedure
from app.responses.records import record_scores
from app.retrieval.records import RecordHit
from app.schemas.procedures import ProcedureHit, ProcedureOut, ProcedureSearchResponse


def procedure_out(row: Procedure) -> ProcedureOut:
    """A procedure as the API shows it (no embedding)."""
    return ProcedureOut.model_validate(row)


def procedure_search_out(mode: str, hits: list[RecordHit]) -> ProcedureSearchResponse:
    """The procedure search answer: each procedure with its scores."""
    return ProcedureSearchResponse(
        mode=mode,
        results=[
            ProcedureHit.model_validate({**dict(procedure_out(hit.row)), **record_scores(hit)})
            for hit in hits
        ],
    )
