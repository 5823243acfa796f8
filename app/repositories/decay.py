"""The decay sweep as one set-based statement per table: score, transition, audit."""

import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.repositories.confidence import effective_confidence_text

_EFFECTIVE = effective_confidence_text("t")

# {table}, {live} (the rows the sweep evaluates), {memory_type}, {final} (the name of the
# lowest transition) and {set_clause} (how each transition changes a row) vary by table.
_SWEEP = """
WITH scored AS (
    SELECT t.id, t.tenant_id, {effective} AS effective
    FROM {table} t
    WHERE {live} AND t.decay_rate > 0
      AND (CAST(:tenant_id AS text) IS NULL OR t.tenant_id = CAST(:tenant_id AS text))
),
planned AS (
    SELECT s.*, CASE
        WHEN s.effective < CAST(:expired_below AS float8) THEN '{final}'
        WHEN s.effective < CAST(:fading_below AS float8) AND t.fading_since IS NULL
             THEN 'fading'
        WHEN s.effective >= CAST(:fading_below AS float8) AND t.fading_since IS NOT NULL
             THEN 'recovered'
    END AS transition
    FROM scored s JOIN {table} t ON t.id = s.id
),
changed AS (
    UPDATE {table} t SET {set_clause}
    FROM planned p
    WHERE t.id = p.id AND p.transition IS NOT NULL AND {live}
    RETURNING t.id, t.tenant_id, p.transition, p.effective
),
logged AS (
    INSERT INTO memory_events (event_type, actor, actor_key_id, tenant_id, payload)
    SELECT '{memory_type}_' || c.transition, 'decay_sweep', CAST(:actor_key_id AS uuid),
           c.tenant_id,
           jsonb_build_object('memory_type', '{memory_type}', 'memory_id', c.id::text,
                              'effective_confidence', c.effective,
                              'job_id', CAST(:job_id AS text))
    FROM changed c
    RETURNING 1
)
SELECT (SELECT count(*) FROM scored) AS evaluated,
       (SELECT count(*) FROM changed WHERE transition = '{final}') AS {final},
       (SELECT count(*) FROM changed WHERE transition = 'fading') AS fading,
       (SELECT count(*) FROM changed WHERE transition = 'recovered') AS recovered,
       (SELECT count(*) FROM logged) AS events
"""

_FADING_CHANGE = """fading_since = CASE p.transition
            WHEN 'fading' THEN now()
            WHEN 'recovered' THEN NULL
            ELSE t.fading_since END"""

FACT_SWEEP = _SWEEP.format(
    effective=_EFFECTIVE,
    table="facts",
    memory_type="fact",
    final="expired",
    live="t.validity = 'active'",
    set_clause=(
        "validity = CASE p.transition WHEN 'expired' THEN 'expired' ELSE t.validity END,\n"
        "        recorded_until = CASE p.transition\n"
        "            WHEN 'expired' THEN greatest(now(), t.created_at)\n"
        "            ELSE t.recorded_until END,\n"
        "        " + _FADING_CHANGE
    ),
)
RULE_SWEEP = _SWEEP.format(
    effective=_EFFECTIVE,
    table="rules",
    memory_type="rule",
    final="forgotten",
    live="t.forgotten_at IS NULL",
    set_clause=(
        "forgotten_at = CASE p.transition WHEN 'forgotten' THEN now() ELSE NULL END,\n"
        "        " + _FADING_CHANGE
    ),
)


async def sweep(
    session: AsyncSession,
    statement: str,
    *,
    tenant_id: str | None,
    job_id: str | None,
    expired_below: float,
    fading_below: float,
    actor_key_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """Run one table's sweep; the counts of evaluated rows and of each transition (its
    events name `actor_key_id`)."""
    result = await session.execute(
        text(statement),
        {
            "tenant_id": tenant_id,
            "job_id": job_id,
            "expired_below": expired_below,
            "fading_below": fading_below,
            "actor_key_id": actor_key_id,
        },
    )
    return dict(result.mappings().one())


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
