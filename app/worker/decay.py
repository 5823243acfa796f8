"""The decay sweep: fading, expiry and forgetting of facts and rules whose confidence decayed."""

from app.core.scope import SYSTEM, Scope
from app.formulas.lifecycle import EXPIRED_BELOW, FADING_BELOW
from app.repositories import decay as decay_rows
from app.services import actors
from app.services.jobs import JobContext, JobOutcome


async def run_decay_sweep(
    ctx: JobContext, *, tenant_id: str | None, job_id: str | None = None
) -> JobOutcome:
    """Evaluate every active fact and live rule with decay_rate > 0 (one tenant, or all).

    effective < 0.05: facts expire, rules are flagged forgotten; 0.05 <= effective < 0.2:
    fading_since is set; a fading item back at >= 0.2 loses it. One set-based
    statement per table; each tenant is its own transaction (a sweep of every tenant never
    holds one long transaction over all of them); each transition is a memory_events row.
    """
    if tenant_id is None:
        async with ctx.transaction(SYSTEM) as session:
            tenants = await decay_rows.tenants_with_decaying_memories(session)
    else:
        tenants = [tenant_id]
    totals: dict[str, dict[str, int]] = {
        "facts": {"evaluated": 0, "expired": 0, "fading": 0, "recovered": 0, "events": 0},
        "rules": {"evaluated": 0, "forgotten": 0, "fading": 0, "recovered": 0, "events": 0},
    }
    for tenant in tenants:
        async with ctx.transaction(Scope(tenant_id=tenant)) as session:
            for table, statement in (
                ("facts", decay_rows.FACT_SWEEP),
                ("rules", decay_rows.RULE_SWEEP),
            ):
                counts = await decay_rows.sweep(
                    session,
                    statement,
                    tenant_id=tenant,
                    job_id=job_id,
                    expired_below=EXPIRED_BELOW,
                    fading_below=FADING_BELOW,
                    actor_key_id=actors.current().key_id,
                )
                for name in totals[table]:
                    totals[table][name] += int(counts[name])
    facts, rules = totals["facts"], totals["rules"]
    return JobOutcome(
        result={
            "facts_evaluated": facts["evaluated"],
            "facts_expired": facts["expired"],
            "facts_fading": facts["fading"],
            "facts_recovered": facts["recovered"],
            "rules_evaluated": rules["evaluated"],
            "rules_forgotten": rules["forgotten"],
            "rules_fading": rules["fading"],
            "rules_recovered": rules["recovered"],
            "events_recorded": facts["events"] + rules["events"],
        }
    )
