"""Tools that store memories and act on one memory: store, get, confirm, contradict, forget,
feedback, inversion."""

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import InvalidInput
from app.mcp.args import (
    ButlerArg,
    ContentArg,
    ContextArg,
    FactIdArg,
    ImportanceArg,
    MemoryIdArg,
    MemoryTypeArg,
    PredicateArg,
    ReasonArg,
    RuleIdArg,
    ScopeArg,
    SubjectArg,
    TagsArg,
    ValidFromArg,
    ValidUntilArg,
)
from app.mcp.calls import Caller, JsonObject, build, call, read_call
from app.mcp.toolset import ToolSet
from app.responses.episodes import episode_out
from app.responses.facts import fact_out
from app.responses.memories import memory_out
from app.responses.rules import rule_out
from app.schemas.common import Permanence
from app.schemas.episodes import EpisodeBatchCreate, EpisodeBatchOut, EpisodeCreate, EpisodeOut
from app.schemas.facts import FactContradiction, FactCreate, FactOut
from app.schemas.rules import HarmfulFeedback, HelpfulFeedback, RuleCreate, RuleOut
from app.services import episodes, fact_beliefs, facts, memories, rules

MemoryOut = EpisodeOut | FactOut | RuleOut


tools = ToolSet()


@tools.add()
async def memory_store_episode(content: ContentArg, butler: ButlerArg, ctx: Context,
                               session_id: str | None = None,
                               importance: ImportanceArg = 5.0) -> JsonObject:
    """Record a raw observation from the current conversation (what the user said or did,
    an outcome). Use it freely during a session; episodes expire after a few days unless
    consolidation distils them into facts and rules. For durable knowledge use
    memory_store_fact; for behavioural guidance use memory_store_rule."""
    item = build(EpisodeCreate, content=content, butler=butler, session_id=session_id,
                 importance=importance)

    async def work(session: AsyncSession, caller: Caller) -> EpisodeOut:
        [row] = await episodes.create_episodes(
            session, tenant_id=caller.tenant_id, embedder=caller.embedder, items=[item],
            ttl_days=caller.settings.episode_ttl_days,
            keyword_context=caller.settings.keyword_context,
            mentions=caller.settings.auto_links.mentions,
            session_gap_minutes=caller.settings.episode_session_gap_minutes)
        return episode_out(row)

    return await call(ctx, work)


@tools.add()
async def memory_store_fact(subject: SubjectArg, predicate: PredicateArg, content: ContentArg,
                            ctx: Context, importance: ImportanceArg = 5.0,
                            permanence: Permanence = "standard", scope: ScopeArg = "global",
                            tags: TagsArg = None,
                            entity_id: uuid.UUID | None = None,
                            valid_from: ValidFromArg = None,
                            valid_until: ValidUntilArg = None) -> JsonObject:
    """Remember a durable fact as subject / predicate / content, e.g. ('Ann', 'favourite
    colour', 'green'). Use it when you learn something that should outlive the session.
    A newer fact with the same subject and predicate in the same scope (or the same
    entity_id and predicate) supersedes the old one, so store corrections the same way.
    permanence sets how fast confidence decays: permanent, stable, standard, volatile,
    ephemeral. valid_from / valid_until say when it held in the world (a fact about an
    earlier period than the current one goes into its history)."""
    data = build(FactCreate, subject=subject, predicate=predicate, content=content,
                 importance=importance, permanence=permanence, scope=scope, tags=tags,
                 entity_id=entity_id, valid_from=valid_from, valid_until=valid_until)

    async def work(session: AsyncSession, caller: Caller) -> FactOut:
        stored = await facts.store_fact(session, tenant_id=caller.tenant_id,
                                        embedder=caller.embedder, data=data,
                                        auto_links=caller.settings.auto_links)
        return fact_out(stored.fact)

    return await call(ctx, work)


@tools.add()
async def memory_store_rule(content: ContentArg, ctx: Context, scope: ScopeArg = "global",
                            tags: TagsArg = None) -> JsonObject:
    """Remember a behavioural rule ('Always confirm the date before booking'). Use it when
    you learn how to act, not what is true. Rules start as candidates and mature with
    memory_mark_helpful / memory_mark_harmful feedback."""
    data = build(RuleCreate, content=content, scope=scope, tags=tags)

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        row = await rules.store_rule(session, tenant_id=caller.tenant_id,
                                     embedder=caller.embedder, data=data,
                                     auto_links=caller.settings.auto_links)
        return rule_out(row)

    return await call(ctx, work)


@tools.add()
async def memory_get(memory_type: MemoryTypeArg, memory_id: MemoryIdArg,
                     ctx: Context) -> JsonObject:
    """Read one memory by type and id (ids come from search, recall or store results).
    Reading counts as a reference, which keeps the memory relevant."""
    return await _on_memory(ctx, memory_type, memory_id, memories.get_memory, read_only=True)


@tools.add()
async def memory_confirm(memory_type: MemoryTypeArg, memory_id: MemoryIdArg,
                         ctx: Context) -> JsonObject:
    """Confirm that a fact or rule is still true, restarting its confidence decay. Use it
    when the user or the world corroborates a memory you relied on. Episodes cannot be
    confirmed."""
    return await _on_memory(ctx, memory_type, memory_id, memories.confirm)


@tools.add()
async def memory_contradict(fact_id: FactIdArg, ctx: Context,
                            reasoning: ReasonArg = None) -> JsonObject:
    """Report evidence that an active fact no longer holds, with why. Each contradiction
    halves the fact's confidence (it ranks lower in search and recall); once contradictions
    exceed confirmations by three the fact is retracted. When you know what is true now,
    store that fact instead (it supersedes the old one)."""
    data = build(FactContradiction, reasoning=reasoning)

    async def work(session: AsyncSession, caller: Caller) -> FactOut:
        return fact_out(await fact_beliefs.contradict(
            session, tenant_id=caller.tenant_id, fact_id=fact_id, reasoning=data.reasoning))

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))
async def memory_forget(memory_type: MemoryTypeArg, memory_id: MemoryIdArg,
                        ctx: Context) -> JsonObject:
    """Forget a memory that is wrong or that the user asks you to forget: an episode
    expires now, a fact is retracted, a rule is flagged forgotten. It then leaves search
    and recall. To correct a fact, store the new one instead (it supersedes the old)."""
    return await _on_memory(ctx, memory_type, memory_id, memories.forget)


@tools.add()
async def memory_mark_helpful(rule_id: RuleIdArg, ctx: Context,
                              context: ContextArg = None) -> JsonObject:
    """Report that following a rule helped. Use it after applying a rule that worked;
    enough successes promote it (candidate -> established -> proven)."""
    feedback = build(HelpfulFeedback, context=context)

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        row = await rules.mark_helpful(session, tenant_id=caller.tenant_id,
                                       rule_id=rule_id, context=feedback.context)
        return rule_out(row)

    return await call(ctx, work)


@tools.add()
async def memory_mark_harmful(rule_id: RuleIdArg, ctx: Context, reason: ReasonArg = None,
                              context: ContextArg = None) -> JsonObject:
    """Report that following a rule did harm, with the reason. Harm weighs four times a
    success: it demotes the rule, and repeated harm flags it for inversion into an
    anti-pattern."""
    feedback = build(HarmfulFeedback, reason=reason, context=context)

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        row = await rules.mark_harmful(session, tenant_id=caller.tenant_id,
                                       rule_id=rule_id, reason=feedback.reason,
                                       context=feedback.context)
        return rule_out(row)

    return await call(ctx, work)


@tools.add()
async def memory_store_episodes(
    items: Annotated[list[dict[str, Any]], Field(
        min_length=1, description="The episodes, each {content, butler, session_id?, "
                                  "importance?, occurred_at?}, in the order they happened.")],
    ctx: Context,
) -> JsonObject:
    """Record many observations at once, all or none, e.g. the turns of a conversation
    (with their session_id, in order) at the end of a session; up to the server's
    max_batch_size (500 by default). One at a time: memory_store_episode."""
    request = build(EpisodeBatchCreate, items=items)

    async def work(session: AsyncSession, caller: Caller) -> EpisodeBatchOut:
        if len(request.items) > caller.settings.max_batch_size:
            raise InvalidInput(f"a batch holds at most {caller.settings.max_batch_size} "
                               "episodes", field="items")
        rows = await episodes.create_episodes(
            session, tenant_id=caller.tenant_id, embedder=caller.embedder,
            items=request.items, ttl_days=caller.settings.episode_ttl_days,
            keyword_context=caller.settings.keyword_context,
            session_gap_minutes=caller.settings.episode_session_gap_minutes)
        return EpisodeBatchOut(items=[episode_out(row) for row in rows])

    return await call(ctx, work)


@tools.add()
async def rule_invert(rule_id: RuleIdArg, ctx: Context) -> JsonObject:
    """Turn a rule that keeps doing harm into an anti-pattern ('ANTI-PATTERN: Do NOT ...'),
    so recall warns against it. Only a rule flagged needs_inversion (after repeated
    memory_mark_harmful) can be inverted."""

    async def work(session: AsyncSession, caller: Caller) -> RuleOut:
        return rule_out(await rules.invert(session, tenant_id=caller.tenant_id,
                                           embedder=caller.embedder, rule_id=rule_id))

    return await call(ctx, work)


async def _on_memory(ctx: Context, memory_type: str, memory_id: uuid.UUID,
                     action: Callable[..., Awaitable[Any]], *,
                     read_only: bool = False) -> JsonObject:
    """Run a service action on one memory by type and id; the memory as it is after. An
    action that only reads may run on a read replica."""
    model = memories.model_for(memory_type)

    async def work(session: AsyncSession, caller: Caller) -> MemoryOut:
        row = await action(session, model, tenant_id=caller.tenant_id, memory_id=memory_id)
        return memory_out(row)

    return await (read_call if read_only else call)(ctx, work)
