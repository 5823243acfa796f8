"""Memory stats for health monitoring."""

from pydantic import Field

from app.schemas.common import IsoDatetime, ResponseModel


class EpisodeStats(ResponseModel):
    total: int
    unconsolidated: int = Field(description="Episodes with consolidation_status 'pending'.")
    failed: int = Field(
        description="Episodes with consolidation_status 'failed': consolidation failed "
        "`consolidation_max_attempts` times or more, and tries them again after a "
        "backoff until they are consolidated."
    )
    next_retry_at: IsoDatetime | None = Field(
        description="When consolidation next tries a failed episode; null with none failed."
    )
    backlog_age_hours: float = Field(
        description="Hours since the oldest pending episode was created; 0 with no backlog."
    )
    oldest_unconsolidated_at: IsoDatetime | None = Field(
        description="When the oldest episode waiting for consolidation (pending) was stored; "
        "null with no backlog."
    )
    expired_unconsolidated: int = Field(
        description="Episodes past their TTL that were never consolidated (nor forgotten): "
        "consolidation still takes them; without an LLM configured cleanup "
        "deletes each `unconsolidated_grace_days` after it expired. Either way "
        "cleanup may take them when the tenant is over capacity."
    )


class FactStats(ResponseModel):
    active: int = Field(description="validity 'active' and not fading.")
    fading: int = Field(description="validity 'active' and fading (the decay sweep's fading flag).")
    superseded: int
    expired: int
    retracted: int


class RuleStats(ResponseModel):
    candidate: int = Field(description="Maturity counts leave forgotten rules out.")
    established: int
    proven: int
    anti_pattern: int
    forgotten: int


class StatsOut(ResponseModel):
    scope: str | None = Field(
        description="Facts and rules of 'global' and this scope, "
        "episodes of this butler; null means everything."
    )
    episodes: EpisodeStats
    facts: FactStats
    rules: RuleStats
    consolidation_configured: bool = Field(
        description="False when no LLM is configured ([llm] base_url): episodes are then never "
        "turned into facts and rules, and cleanup deletes expired ones "
        "`unconsolidated_grace_days` after they expired."
    )
    warnings: list[str] = Field(
        default_factory=list, description="Conditions an operator should know about."
    )
