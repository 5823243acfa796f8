"""The decay sweep, one tenant and table at a time: a set-based UPDATE that scores and moves
the rows, then one event per row it changed."""

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.scope import transaction_now
from app.repositories.confidence import effective_confidence_text

# The effective confidence at the bound :now (the transaction's now(): a distributed UPDATE
# takes no now() in a CASE).
_EFFECTIVE = effective_confidence_text("t", now="CAST(:now AS timestamptz)")

# {table}, {live} (the rows the sweep evaluates), {final} (the name of the lowest transition)
# and {set_clause} (how each transition changes a row) vary by table. One tenant's rows;
# the changed ones come back with their transition, for their events.
_SWEEP = """
UPDATE {table} t SET {set_clause}
FROM (
    SELECT s.id, s.effective, CASE
        WHEN s.effective < CAST(:expired_below AS float8) THEN '{final}'
        WHEN s.effective < CAST(:fading_below AS float8) AND s.fading_since IS NULL
             THEN 'fading'
        WHEN s.effective >= CAST(:fading_below AS float8) AND s.fading_since IS NOT NULL
             THEN 'recovered'
    END AS transition
    FROM (
        SELECT t.id, t.fading_since, {effective} AS effective
        FROM {table} t
        WHERE {live} AND t.decay_rate > 0 AND t.tenant_id = CAST(:tenant_id AS text)
    ) s
) p
WHERE t.tenant_id = CAST(:tenant_id AS text) AND t.id = p.id
  AND p.transition IS NOT NULL AND {live}
RETURNING t.id, p.transition, p.effective
"""
_EVALUATED = """
SELECT count(*) FROM {table} t
WHERE {live} AND t.decay_rate > 0 AND t.tenant_id = CAST(:tenant_id AS text)
"""
_EVENT = text("""
INSERT INTO memory_events (event_type, actor, actor_key_id, tenant_id, payload)
VALUES (:event_type, 'decay_sweep', CAST(:actor_key_id AS uuid), :tenant_id,
        jsonb_build_object('memory_type', CAST(:memory_type AS text),
                           'memory_id', CAST(:memory_id AS text),
                           'effective_confidence', CAST(:effective AS float8),
                           'job_id', CAST(:job_id AS text)))
""")

# Searched CASEs (`CASE WHEN p.transition = ...`): Citus sends a simple `CASE p.transition
# WHEN ...` to the workers as a comparison of text with a boolean.
_FADING_CHANGE = """fading_since = CASE
            WHEN p.transition = 'fading' THEN CAST(:now AS timestamptz)
            WHEN p.transition = 'recovered' THEN NULL
            ELSE t.fading_since END"""


@dataclass(frozen=True)
class Sweep:
    """One table's sweep: its statements and the name of its lowest transition."""

    memory_type: str
    final: str
    update: TextClause
    evaluated: TextClause


def _sweep(memory_type: str, table: str, final: str, live: str, set_clause: str) -> Sweep:
    names = {"table": table, "live": live, "final": final}
    return Sweep(
        memory_type,
        final,
        text(_SWEEP.format(effective=_EFFECTIVE, set_clause=set_clause, **names)),
        text(_EVALUATED.format(**names)),
    )


FACT_SWEEP = _sweep(
    "fact",
    "facts",
    "expired",
    "t.validity = 'active'",
    "validity = CASE WHEN p.transition = 'expired' THEN 'expired' ELSE t.validity END,\n"
    "        recorded_until = CASE\n"
    "            WHEN p.transition = 'expired'\n"
    "            THEN greatest(CAST(:now AS timestamptz), t.created_at)\n"
    "            ELSE t.recorded_until END,\n"
    "        " + _FADING_CHANGE,
)
RULE_SWEEP = _sweep(
    "rule",
    "rules",
    "forgotten",
    "t.forgotten_at IS NULL",
    "forgotten_at = CASE\n"
    "            WHEN p.transition = 'forgotten' THEN CAST(:now AS timestamptz) ELSE NULL END,\n"
    "        " + _FADING_CHANGE,
)


async def sweep(
    session: AsyncSession,
    statement: Sweep,
    *,
    tenant_id: str,
    job_id: str | None,
    expired_below: float,
    fading_below: float,
    actor_key_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Run one table's sweep of one tenant; the counts of evaluated rows and of each
    transition (its events name `actor_key_id`)."""
    tenant = {"tenant_id": tenant_id}
    evaluated = (await session.execute(statement.evaluated, tenant)).scalar_one()
    changed = (
        await session.execute(
            statement.update,
            {
                **tenant,
                "now": await transaction_now(session),
                "expired_below": expired_below,
                "fading_below": fading_below,
            },
        )
    ).all()
    if changed:
        await session.execute(
            _EVENT,
            [
                {
                    "event_type": f"{statement.memory_type}_{row.transition}",
                    "actor_key_id": actor_key_id,
                    "tenant_id": tenant_id,
                    "memory_type": statement.memory_type,
                    "memory_id": str(row.id),
                    "effective": row.effective,
                    "job_id": job_id,
                }
                for row in changed
            ],
        )
    transitions = Counter(row.transition for row in changed)
    return {
        "evaluated": evaluated,
        statement.final: transitions[statement.final],
        "fading": transitions["fading"],
        "recovered": transitions["recovered"],
        "events": len(changed),
    }


async def tenants_with_decaying_memories(session: AsyncSession) -> list[str]:
    """Every tenant holding an active fact or a live rule that decays."""
    rows = await session.execute(
        text(
            "SELECT tenant_id FROM facts WHERE validity = 'active' AND decay_rate > 0 "
            "UNION SELECT tenant_id FROM rules WHERE forgotten_at IS NULL AND decay_rate > 0 "
            "ORDER BY 1"
        )
    )
    return [row[0] for row in rows]
