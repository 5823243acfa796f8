"""Bulk fact results as the API shows them."""

from collections.abc import Sequence

from app.models import Fact
from app.responses.facts import fact_out
from app.schemas.fact_bulk import (
    FactDeleteResult,
    FactDeleteResults,
    FactGetResult,
    FactGetResults,
    FactPutResult,
    FactPutResults,
    FactRef,
)
from app.services.fact_bulk import Deleted
from app.services.facts import StoredFact


def _missing(ref: FactRef) -> str:
    if ref.id is not None:
        return f"fact {ref.id} not found"
    return (
        f"no active fact with scope {ref.scope or 'global'!r}, subject {ref.subject!r} "
        f"and predicate {ref.predicate!r}"
    )


def get_results_out(refs: Sequence[FactRef], facts: Sequence[Fact | None]) -> FactGetResults:
    """One result per reference: 200 and the fact, or 404."""
    return FactGetResults(
        items=[
            FactGetResult(status=200, fact=fact_out(fact))
            if fact is not None
            else FactGetResult(status=404, detail=_missing(ref))
            for ref, fact in zip(refs, facts, strict=True)
        ]
    )


def put_results_out(stored: Sequence[StoredFact]) -> FactPutResults:
    """One result per stored item: 201 a new version, 200 a confirmed identical fact."""
    return FactPutResults(
        items=[
            FactPutResult(status=201 if one.created else 200, fact=fact_out(one.fact))
            for one in stored
        ]
    )


def delete_results_out(refs: Sequence[FactRef], deleted: Sequence[Deleted]) -> FactDeleteResults:
    """One result per reference: 204 with what went, or 404."""
    return FactDeleteResults(
        items=[
            FactDeleteResult(status=204, id=one.fact_id, deleted_ids=one.deleted_ids)
            if one.fact_id is not None
            else FactDeleteResult(status=404, detail=_missing(ref))
            for ref, one in zip(refs, deleted, strict=True)
        ]
    )
