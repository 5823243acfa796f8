"""Storing rules, helpful/harmful feedback with maturity moves, anti-pattern inversion."""

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.config import AutoLinkSettings
from app.core.errors import Conflict, InvalidInput
from app.core.text import preprocess_text
from app.embedding import Embedder
from app.formulas import lifecycle
from app.models import Rule
from app.repositories import episodes as episode_rows
from app.repositories import events as event_rows
from app.repositories import memories as memory_rows
from app.repositories import rules as rule_rows
from app.repositories.rules import RuleFilters
from app.schemas.filters import MemoryFilter
from app.schemas.rules import RuleCreate, RuleListQuery
from app.services import butler_limits, events
from app.services.auto_links import link_stored
from app.services.embeddings import embed_for_write, embed_texts, store_passages
from app.services.events import memory_event
from app.services.memories import load_for_update
from app.services.rule_reasons import ShownRule, shown, shown_one


async def store_rule(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    data: RuleCreate,
    auto_links: AutoLinkSettings | None = None,
) -> Rule:
    """Store a candidate rule: confidence 0.5, decay 0.01, effectiveness 0, counts 0; linked
    `related_to` its most similar facts and rules (`auto_links`) and `mentions` the entities it
    names."""
    butler_limits.check_butler(data.scope, "scope")
    # The model runs before the first SQL, so no connection is held while it works.
    embedded = await embed_for_write(session, embedder, [data.content], tenant_id=tenant_id)
    if data.source_episode_id is not None and not await episode_rows.episode_exists(
        session, tenant_id=tenant_id, episode_id=data.source_episode_id
    ):
        raise InvalidInput(
            f"episode {data.source_episode_id} does not exist", field="source_episode_id"
        )
    rule = await rule_rows.insert_rule(
        session,
        {
            "tenant_id": tenant_id,
            "content": data.content,
            "scope": data.scope,
            "maturity": "candidate",
            "confidence": lifecycle.NEW_RULE_CONFIDENCE,
            "decay_rate": lifecycle.RULE_DECAY_RATE,
            "effectiveness_score": 0.0,
            "applied_count": 0,
            "success_count": 0,
            "harmful_count": 0,
            "tags": data.tags,
            "source_butler": data.source_butler,
            "source_episode_id": data.source_episode_id,
            "metadata_": data.metadata,
            **embedded.columns(0),
            "search_text": preprocess_text(data.content),
            "language": data.language,
        },
    )
    await link_stored(
        session,
        "rule",
        rule,
        rule.content,
        tenant_id=tenant_id,
        embedded=embedded,
        settings=auto_links,
    )
    await events.record(session, [memory_event("rule_created", tenant_id, rule)])
    return rule


async def mark_helpful(
    session: AsyncSession, *, tenant_id: str, rule_id: uuid.UUID, context: dict[str, Any]
) -> ShownRule:
    """Count a helpful application: effectiveness = success / applied, then maybe promote."""
    rule = await _live_rule(session, tenant_id=tenant_id, rule_id=rule_id)
    outcome = lifecycle.after_helpful(
        maturity=rule.maturity,
        applied_count=rule.applied_count,
        success_count=rule.success_count,
        harmful_count=rule.harmful_count,
        age_days=lifecycle.days_between(rule.created_at, now_utc()),
    )
    still_flagged = rule.needs_inversion and outcome.needs_inversion
    return await _apply_feedback(
        session,
        tenant_id=tenant_id,
        rule=rule,
        outcome=outcome,
        needs_inversion=still_flagged,
        kind="helpful",
        reason=None,
        context=context,
    )


async def mark_harmful(
    session: AsyncSession,
    *,
    tenant_id: str,
    rule_id: uuid.UUID,
    reason: str | None,
    context: dict[str, Any],
) -> ShownRule:
    """Count a harmful application with the 4x penalty, then maybe demote or flag inversion;
    a reason joins the rule's harmful reasons."""
    rule = await _live_rule(session, tenant_id=tenant_id, rule_id=rule_id)
    outcome = lifecycle.after_harmful(
        maturity=rule.maturity,
        applied_count=rule.applied_count,
        success_count=rule.success_count,
        harmful_count=rule.harmful_count,
    )
    flagged = rule.needs_inversion or outcome.needs_inversion
    return await _apply_feedback(
        session,
        tenant_id=tenant_id,
        rule=rule,
        outcome=outcome,
        needs_inversion=flagged,
        kind="harmful",
        reason=reason,
        context=context,
    )


async def invert(
    session: AsyncSession, *, tenant_id: str, embedder: Embedder, rule_id: uuid.UUID
) -> ShownRule:
    """Rewrite a rule flagged `needs_inversion` as an anti-pattern, keeping the original."""
    rule = await _live_rule(session, tenant_id=tenant_id, rule_id=rule_id)
    if not rule.needs_inversion:
        raise Conflict(
            f"rule {rule_id} is not flagged for inversion (needs harmful_count >= "
            f"{lifecycle.INVERSION_MIN_HARMFUL} and effectiveness < "
            f"{lifecycle.INVERSION_MAX_EFFECTIVENESS})"
        )
    previous_maturity = rule.maturity
    reasons = (
        await event_rows.harmful_reasons(session, tenant_id=tenant_id, rule_ids=[rule.id])
    ).get(rule.id, [])
    content = lifecycle.anti_pattern_content(rule.content, reasons)
    embedded = await embed_texts(session, embedder, [content], tenant_id=tenant_id)
    updated = await memory_rows.update_row(
        session,
        Rule,
        tenant_id=tenant_id,
        memory_id=rule.id,
        values={
            "content": content,
            "maturity": "anti_pattern",
            **embedded.columns(0),
            **(await memory_rows.search_columns(preprocess_text(content))),
            "original_content": rule.content,
            "needs_inversion": False,
        },
    )
    await store_passages(
        session, "rule", tenant_id=tenant_id, memory_ids=[rule.id], embedded=embedded, replace=True
    )
    await events.record(
        session,
        [memory_event("rule_inverted", tenant_id, updated, from_maturity=previous_maturity)],
    )
    return ShownRule(updated, reasons)


async def list_rules(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: RuleListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[ShownRule], str | None]:
    """A page of the tenant's rules, newest first; forgotten ones only on request."""
    filters = RuleFilters(
        scope=query.scope,
        maturity=query.maturity,
        include_forgotten=query.include_forgotten,
        memory_filter=memory_filter,
    )
    rows, next_cursor = await rule_rows.list_rules(
        session, tenant_id=tenant_id, filters=filters, limit=query.limit, cursor=query.cursor
    )

    return await shown(session, tenant_id=tenant_id, rows=rows), next_cursor


async def _live_rule(session: AsyncSession, *, tenant_id: str, rule_id: uuid.UUID) -> Rule:
    rule: Rule = await load_for_update(session, Rule, tenant_id=tenant_id, memory_id=rule_id)
    if rule.forgotten_at is not None:
        raise Conflict(f"rule {rule_id} is forgotten")
    return rule


async def _apply_feedback(
    session: AsyncSession,
    *,
    tenant_id: str,
    rule: Rule,
    outcome: lifecycle.FeedbackOutcome,
    needs_inversion: bool,
    kind: str,
    reason: str | None,
    context: dict[str, Any],
) -> ShownRule:
    previous_maturity = rule.maturity
    was_flagged = rule.needs_inversion
    updated = await rule_rows.apply_feedback(
        session,
        tenant_id=tenant_id,
        rule_id=rule.id,
        outcome=outcome,
        needs_inversion=needs_inversion,
    )
    await event_rows.add_rule_application(
        session, tenant_id=tenant_id, rule_id=rule.id, outcome=kind, reason=reason, context=context
    )
    happened = [
        memory_event(
            f"rule_marked_{kind}",
            tenant_id,
            updated,
            effectiveness_score=outcome.effectiveness_score,
            reason=reason,
        )
    ]
    if outcome.maturity != previous_maturity:
        happened.append(
            memory_event(
                "rule_maturity_changed",
                tenant_id,
                updated,
                from_maturity=previous_maturity,
                to_maturity=outcome.maturity,
            )
        )
    if needs_inversion and not was_flagged:
        happened.append(memory_event("rule_inversion_flagged", tenant_id, updated))
    await events.record(session, happened)
    return await shown_one(session, tenant_id=tenant_id, row=updated)
