"""Run tools: the record of task runs, their messages and feedback, and the lessons learned
from failed ones, as /v1/runs offers them."""

import uuid
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from app.mcp.args import CursorArg, PageLimitArg, QueryArg, RunFilterArg, filter_of
from app.mcp.calls import Caller, JsonObject, build, call, page_call
from app.mcp.toolset import ToolSet
from app.responses.data_rights import deleted_out
from app.responses.runs import (
    message_batch_out,
    run_detail_out,
    run_feedback_out,
    run_out,
    run_search_out,
)
from app.schemas.common import Content, Metadata, Name, Reason
from app.schemas.data_rights import DeletedOut
from app.schemas.runs import (
    FeedbackCreate,
    FeedbackSource,
    LessonsOut,
    LessonsRequest,
    MessageBatchCreate,
    MessageBatchOut,
    RunCreate,
    RunDetailOut,
    RunFeedbackOut,
    RunListQuery,
    RunOut,
    RunSearchRequest,
    RunSearchResponse,
    RunUpdate,
)
from app.services import run_lessons, runs

RunIdArg = Annotated[uuid.UUID, Field(description="The run's id (a UUID).")]
MessagesArg = Annotated[
    list[dict[str, Any]],
    Field(
        description="Messages in order, each {role: planner|executor|critic|human, content, "
        "token_count?}."
    ),
]


tools = ToolSet("runs")


@tools.add()
async def run_create(
    task_id: Name,
    ctx: Context,
    summary: Content | None = None,
    agent_version: Name | None = None,
    task_version: Name | None = None,
    rubric_version: Name | None = None,
    meta: Metadata | None = None,
) -> JsonObject:
    """Start the record of a task run before working on it; log its messages with
    run_log_messages, finish it with run_finish and let a critic or human judge it with
    run_add_feedback. Returns the run with its id."""
    request = build(
        RunCreate,
        task_id=task_id,
        summary=summary,
        agent_version=agent_version,
        task_version=task_version,
        rubric_version=rubric_version,
        meta=meta,
    )

    async def work(session: AsyncSession, caller: Caller) -> RunOut:
        return run_out(
            await runs.create_run(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                data=request,
                mentions=caller.settings.auto_links.mentions,
            )
        )

    return await call(ctx, work)


@tools.add()
async def run_log_messages(run_id: RunIdArg, messages: MessagesArg, ctx: Context) -> JsonObject:
    """Append messages (planner, executor, critic or human) to a run, in order, all or
    none; token_count is estimated when left out."""
    request = build(MessageBatchCreate, items=messages)

    async def work(session: AsyncSession, caller: Caller) -> MessageBatchOut:
        rows = await runs.append_messages(
            session,
            tenant_id=caller.tenant_id,
            embedder=caller.embedder,
            run_id=run_id,
            items=request.items,
        )
        return message_batch_out(rows)

    return await call(ctx, work)


@tools.add()
async def run_finish(
    run_id: RunIdArg,
    ctx: Context,
    success: bool | None = None,
    score_numeric: float | None = None,
    summary: Content | None = None,
) -> JsonObject:
    """Mark a run finished now (a finished run keeps its time), with its outcome: success
    true or false, a score, a summary of what happened (it is embedded, so similar runs
    are found by it)."""
    request = build(RunUpdate, success=success, score_numeric=score_numeric, summary=summary)

    async def work(session: AsyncSession, caller: Caller) -> RunOut:
        return run_out(
            await runs.update_run(
                session,
                tenant_id=caller.tenant_id,
                embedder=caller.embedder,
                run_id=run_id,
                data=request,
                finish=True,
            )
        )

    return await call(ctx, work)


@tools.add()
async def run_add_feedback(
    run_id: RunIdArg,
    source: FeedbackSource,
    rating: float,
    ctx: Context,
    rationale: Reason | None = None,
) -> JsonObject:
    """Judge a run: source critic or human, rating from 0 (worst) to 1 (best) and the
    rationale. A low-rated failed run's critic rationale is what later runs learn from."""
    request = build(FeedbackCreate, source=source, rating=rating, rationale=rationale)

    async def work(session: AsyncSession, caller: Caller) -> RunFeedbackOut:
        return run_feedback_out(
            await runs.add_feedback(
                session, tenant_id=caller.tenant_id, run_id=run_id, data=request
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
async def run_delete(run_id: RunIdArg, ctx: Context) -> JsonObject:
    """Delete a task run for good with its messages and feedback; rules learned from it stay
    (memory_erase with run_id takes them too)."""

    async def work(session: AsyncSession, caller: Caller) -> DeletedOut:
        counts = await runs.delete_run(session, tenant_id=caller.tenant_id, run_id=run_id)
        return deleted_out("run", run_id, counts)

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def run_get(run_id: RunIdArg, ctx: Context) -> JsonObject:
    """Read one run with all its messages (in the order they were logged) and every feedback
    it received."""

    async def work(session: AsyncSession, caller: Caller) -> RunDetailOut:
        return run_detail_out(
            await runs.get_run(session, tenant_id=caller.tenant_id, run_id=run_id)
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def run_search(
    query: QueryArg,
    ctx: Context,
    success: bool | None = None,
    task_id: Name | None = None,
    limit: int = 10,
) -> JsonObject:
    """Past runs similar to a task description, each with its feedback. Before planning,
    ask with success=false for similar past failures and plan around what their critics
    said."""
    request = build(RunSearchRequest, query=query, success=success, task_id=task_id, limit=limit)

    async def work(session: AsyncSession, caller: Caller) -> RunSearchResponse:
        return run_search_out(
            await runs.search_runs(
                session,
                searcher=caller.searcher,
                request=request,
            )
        )

    return await call(ctx, work)


@tools.add(annotations=ToolAnnotations(read_only_hint=True))
async def run_list(
    ctx: Context,
    task_id: Name | None = None,
    success: bool | None = None,
    limit: PageLimitArg = 50,
    cursor: CursorArg = None,
    filter: RunFilterArg = None,
) -> JsonObject:
    """List runs newest first, optionally of one task_id or outcome. To find runs like a task,
    use run_search."""
    query = build(RunListQuery, task_id=task_id, success=success, limit=limit, cursor=cursor)
    return await page_call(
        ctx,
        runs.list_runs,
        run_out,
        query=query,
        memory_filter=filter_of(filter, "run"),
        read_only=False,
    )


@tools.add()
async def run_learn_lessons(
    ctx: Context,
    max_rating: float | None = None,
    scope: Name | None = None,
    run_id: uuid.UUID | None = None,
) -> JsonObject:
    """Turn what critics said about failed runs into candidate rules, one per critic feedback
    rated at most max_rating; up to 100 a call."""
    request = build(
        LessonsRequest,
        max_rating=max_rating,
        scope=scope,
        run_id=None if run_id is None else str(run_id),
    )

    async def work(session: AsyncSession, caller: Caller) -> LessonsOut:
        learned = await run_lessons.learn_from_failures(
            session, tenant_id=caller.tenant_id, embedder=caller.embedder, request=request
        )
        return LessonsOut(rules_created=len(learned), rule_ids=[rule.id for rule in learned])

    return await call(ctx, work)
