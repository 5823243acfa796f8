"""The decay sweep: fading, expiry and forgetting of facts and rules whose confidence decayed."""

from app.repositories import decay as decay_rows
from app.services.jobs import JobContext, JobOutcome
from app.services.lifecycle import EXPIRED_BELOW, FADING_BELOW


async def run_decay_sweep(ctx: JobContext, *, tenant_id: str | None,
                          job_id: str | None = None) -> JobOutcome:
    """Evaluate every active fact and live rule with decay_rate > 0 (one tenant, or all).

    effective < 0.05: facts expire, rules are flagged forgotten; 0.05 <= effective < 0.2:
    fading_since is set; a fading item back at >= 0.2 loses it. One set-based
    statement per table, in one transaction; each transition is a memory_events row.
    """
    async with ctx.transaction() as session:
        facts = await decay_rows.sweep(session, decay_rows.FACT_SWEEP, tenant_id=tenant_id,
                                       job_id=job_id, expired_below=EXPIRED_BELOW,
                                       fading_below=FADING_BELOW)
        rules = await decay_rows.sweep(session, decay_rows.RULE_SWEEP, tenant_id=tenant_id,
                                       job_id=job_id, expired_below=EXPIRED_BELOW,
                                       fading_below=FADING_BELOW)
    return JobOutcome(result={
        "facts_evaluated": facts["evaluated"],
        "facts_expired": facts["expired"],
        "facts_fading": facts["fading"],
        "facts_recovered": facts["recovered"],
        "rules_evaluated": rules["evaluated"],
        "rules_forgotten": rules["forgotten"],
        "rules_fading": rules["fading"],
        "rules_recovered": rules["recovered"],
        "events_recorded": facts["events"] + rules["events"],
    })
