"""Entities and merge receipts as the API shows them."""

from app.formulas.resolve import Candidate
from app.models import Entity
from app.schemas.entities import EntityOut, MergeOut, ResolveCandidate
from app.services.merge import MergeResult


def entity_out(row: Entity) -> EntityOut:
    """An entity as the API shows it."""
    return EntityOut.model_validate(row)


def resolve_out(candidates: list[Candidate]) -> list[ResolveCandidate]:
    """Ranked candidates of a name, best first."""
    return [ResolveCandidate.model_validate(candidate) for candidate in candidates]


def merge_out(result: MergeResult) -> MergeOut:
    """What a merge did: the merged target and the counts."""
    return MergeOut(
        target=entity_out(result.target),
        source_entity_id=result.source_entity_id,
        target_entity_id=result.target_entity_id,
        facts_repointed=result.facts_repointed,
        facts_superseded=result.facts_superseded,
        aliases_added=result.aliases_added,
    )
