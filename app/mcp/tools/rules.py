"""Rule tools: store a rule, report that following it helped or did harm, invert it into an
anti-pattern, list rules."""

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import (
    ContentArg,
    ContextArg,
    CursorArg,
    FilterArg,
    PageLimitArg,
    ReasonArg,
    RuleIdArg,
    ScopeArg,
    TagsArg,
    filter_of,
)
from app.mcp.calls import Caller, JsonObject, build, call, page_call
from app.mcp.groups import CORE
from app.mcp.toolset import ToolSet
from app.responses.rules import rule_out
from app.schemas.common import MaturityLevel, Name
from app.schemas.rules import HarmfulFeedback, HelpfulFeedback, RuleCreate, RuleListQuery, RuleOut
from app.services import rules

tools = ToolSet("memories")


@tools.add(group=CORE)
async def memory_store_rule(
    content: ContentArg, ctx: Context, scope: ScopeArg = "global", tags: TagsArg = None
) -> JsonObject:
    """Remember a behavioural rule ('Always confirm the date before booking'): how to act, not
    what is true. It matures with memory_mark_helpful / memory_mark_harmful."""
    data = build(RuleCreate, content=content, scope=scope, tags=tags)

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        row = await rules.store_rule(
            session,
            tenant_id=caller.tenant_id,
            embedder=caller.embedder,
            data=data,
            auto_links=caller.settings.auto_links,
        )
        return rule_out(row)

    return await call(ctx, work)


@tools.add(group=CORE)
async def memory_mark_helpful(
    rule_id: RuleIdArg, ctx: Context, context: ContextArg = None
) -> JsonObject:
    """Report that following a rule helped; successes promote it (candidate, established,
    proven)."""
    feedback = build(HelpfulFeedback, context=context)

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        row = await rules.mark_helpful(
            session, tenant_id=caller.tenant_id, rule_id=rule_id, context=feedback.context
        )
        return rule_out(row)

    return await call(ctx, work)


@tools.add(group=CORE)
async def memory_mark_harmful(
    rule_id: RuleIdArg, ctx: Context, reason: ReasonArg = None, context: ContextArg = None
) -> JsonObject:
    """Report that following a rule did harm, with the reason; harm demotes the rule."""
    feedback = build(HarmfulFeedback, reason=reason, context=context)

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        row = await rules.mark_harmful(
            session,
            tenant_id=caller.tenant_id,
            rule_id=rule_id,
            reason=feedback.reason,
            context=feedback.context,
        )
        return rule_out(row)

    return await call(ctx, work)


@tools.add()
async def memory_invert_rule(rule_id: RuleIdArg, ctx: Context) -> JsonObject:
    """Turn a rule that keeps doing harm into an anti-pattern ('ANTI-PATTERN: Do NOT ...'),
    so recall warns against it. Only a rule flagged needs_inversion (after repeated
    memory_mark_harmful) can be inverted."""

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        return rule_out(
            await rules.invert(
                session, tenant_id=caller.tenant_id, embedder=caller.embedder, rule_id=rule_id
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def memory_list_rules(
    ctx: Context,
    scope: Name | None = None,
    maturity: MaturityLevel | None = None,
    include_forgotten: bool = False,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: FilterArg = None,
) -> JsonObject:
    """List rules newest first, optionally of one scope or maturity. For the rules that matter
    to a task, use memory_recall."""
    query = build(
        RuleListQuery,
        scope=scope,
        maturity=maturity,
        include_forgotten=include_forgotten,
        limit=limit,
        cursor=cursor,
    )
    return await page_call(
        ctx, rules.list_rules, rule_out, query=query, memory_filter=filter_of(filter)
    )
