"""The scores a procedure or arc search hit shows beside its fields."""

from typing import Any

from app.retrieval.records import RecordHit


def record_scores(hit: RecordHit) -> dict[str, Any]:
    """A record hit's scores, named as the API names them (`rank`: the keyword score)."""
    return {
        "similarity": hit.similarity,
        "rank": hit.keyword_score,
        "rrf_score": hit.rrf_score,
        "semantic_rank": hit.semantic_rank,
        "keyword_rank": hit.keyword_rank,
        "fused_score": hit.fused_score,
        "contributions": hit.contributions,
    }
