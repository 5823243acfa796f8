"""Run lessons: a failed run's critic feedback becomes a candidate rule for consolidation.

The rule enters the normal rule lifecycle (candidate -> established -> proven through
helpful/harmful marks, or decay) and keeps its provenance as `derived_from` links to the
feedback and to the run.
"""

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from app.embedding import Embedder
from app.models import Rule
from app.repositories import ledger as ledger_rows
from app.repositories import runs as run_rows
from app.schemas.rules import RuleCreate
from app.schemas.runs import LessonsRequest
from app.services import butler_limits
from app.services.rules import store_rule

MAX_LESSONS = 100
DERIVED_FROM = "derived_from"


def lesson_text(task_id: str, rationale: str) -> str:
    """The rule a critic's rationale becomes."""
    return f"When doing task {task_id}: {' '.join(rationale.split())}"


async def learn_from_failures(
    session: AsyncSession, *, tenant_id: str, embedder: Embedder, request: LessonsRequest
) -> list[Rule]:
    """Turn up to 100 unlearned critic feedbacks of failed runs into candidate rules."""
    butler_limits.check_unlimited("learning rules from runs")
    found = await run_rows.unlearned_failures(
        session,
        tenant_id=tenant_id,
        max_rating=request.max_rating,
        run_id=request.run_id,
        limit=MAX_LESSONS,
    )
    rules = []
    for feedback, run in found:
        assert feedback.rationale is not None
        rule = await store_rule(
            session,
            tenant_id=tenant_id,
            embedder=embedder,
            data=RuleCreate(
                content=lesson_text(run.task_id, feedback.rationale),
                scope=request.scope,
                tags=["run-lesson"],
            ),
        )
        await run_rows.set_lesson_rule(
            session, tenant_id=tenant_id, feedback_id=feedback.id, rule_id=rule.id
        )
        await ledger_rows.add_links(
            session,
            [
                _link(tenant_id, rule.id, "run_feedback", feedback.id),
                _link(tenant_id, rule.id, "run", run.id),
            ],
        )
        rules.append(rule)
    return rules


def _link(
    tenant_id: str, rule_id: uuid.UUID, target_type: str, target_id: uuid.UUID
) -> dict[str, object]:
    return {
        "tenant_id": tenant_id,
        "source_type": "rule",
        "source_id": rule_id,
        "target_type": target_type,
        "target_id": target_id,
        "relation": DERIVED_FROM,
    }
