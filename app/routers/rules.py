"""/v1/rules: behavioural guidance whose maturity follows feedback."""

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from app.core.errors import problem_responses
from app.deps import EmbedderDep, ReadSessionDep, SessionDep, SettingsDep, TenantDep
from app.models import Rule
from app.responses.pages import page_out
from app.responses.rules import rule_out
from app.routers.created import locate
from app.routers.memory_routes import MemoryRoutes
from app.routers.params import FilterQuery
from app.schemas.common import Page
from app.schemas.rules import HarmfulFeedback, HelpfulFeedback, RuleCreate, RuleListQuery, RuleOut
from app.services import rules

router = APIRouter(prefix="/v1/rules", tags=["rules"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=RuleOut,
    responses=problem_responses(422),
    summary="Store a rule",
)
async def create_rule(
    body: RuleCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> RuleOut:
    """Store a candidate rule: confidence 0.5, decay_rate 0.01, effectiveness 0. It is linked
    `related_to` (strength: the cosine similarity) the live facts and rules of its scope that
    are at least `[auto_links] threshold` similar, the nearest `max_links` of them."""
    row = await rules.store_rule(
        session, tenant_id=tenant_id, embedder=embedder, data=body, auto_links=settings.auto_links
    )
    locate(request, response, f"/v1/rules/{row.id}")
    return rule_out(row)


@router.get(
    "", response_model=Page[RuleOut], responses=problem_responses(422), summary="List rules"
)
async def list_rules(
    session: ReadSessionDep,
    tenant_id: TenantDep,
    query: Annotated[RuleListQuery, Query()],
    memory_filter: FilterQuery = None,
) -> Page[RuleOut]:
    """Rules newest first; forgotten ones only on request."""
    return page_out(
        await rules.list_rules(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        rule_out,
    )


routes = MemoryRoutes(router, "rule", Rule, RuleOut, rule_out)
routes.get()
routes.confirm()
routes.forget(
    summary="Forget a rule",
    doc="Mark the rule forgotten (`forgotten: true`); it leaves search, recall and listings.",
)


@router.post(
    "/{rule_id}/helpful",
    response_model=RuleOut,
    responses=problem_responses(404, 409, 422),
    summary="Mark a rule helpful",
)
async def mark_helpful(
    rule_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    body: HelpfulFeedback | None = None,
) -> RuleOut:
    """applied+1, success+1, effectiveness = success/applied; promotes when thresholds are met.

    candidate -> established at success >= 5 and effectiveness >= 0.6; established -> proven
    at success >= 15, effectiveness >= 0.8 and age >= 30 days.
    """
    context = body.context if body else {}
    row = await rules.mark_helpful(session, tenant_id=tenant_id, rule_id=rule_id, context=context)
    return rule_out(row)


@router.post(
    "/{rule_id}/harmful",
    response_model=RuleOut,
    responses=problem_responses(404, 409, 422),
    summary="Mark a rule harmful",
)
async def mark_harmful(
    rule_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    body: HarmfulFeedback | None = None,
) -> RuleOut:
    """applied+1, harmful+1, effectiveness = success/(success + 4*harmful + 0.01).

    proven -> established below 0.8, established -> candidate below 0.6; harmful >= 3 with
    effectiveness < 0.3 sets `needs_inversion`. The reason is kept with the application
    (rule_applications), shown in the rule's `metadata.harmful_reasons` (oldest first) and
    read back by `invert`.
    """
    reason, context = (body.reason, body.context) if body else (None, {})
    row = await rules.mark_harmful(
        session, tenant_id=tenant_id, rule_id=rule_id, reason=reason, context=context
    )
    return rule_out(row)


@router.post(
    "/{rule_id}/invert",
    response_model=RuleOut,
    responses=problem_responses(404, 409, 422),
    summary="Invert a rule to an anti-pattern",
)
async def invert_rule(
    rule_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep, embedder: EmbedderDep
) -> RuleOut:
    """Rewrite a rule flagged needs_inversion as 'ANTI-PATTERN: Do NOT ...'; 409 otherwise."""
    row = await rules.invert(session, tenant_id=tenant_id, embedder=embedder, rule_id=rule_id)
    return rule_out(row)


routes.delete(
    summary="Delete a rule for good",
    doc="""
    Hard-delete the rule: its applications (feedback reasons), links, keyword postings and
    audit events go too. A content-free `rule_deleted` event records the id and the key. 404
    when the tenant has none.""",
)
