"""/v1/runs: task runs with their messages and feedback."""

import uuid
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response, status

from app.core.errors import problem_responses
from app.deps import EmbedderDep, SearcherDep, SessionDep, SettingsDep, TenantDep
from app.responses.pages import page_out
from app.responses.runs import (
    message_batch_out,
    run_detail_out,
    run_feedback_out,
    run_message_out,
    run_out,
    run_search_out,
)
from app.routers.created import locate
from app.routers.params import RunFilterQuery
from app.schemas.common import Page
from app.schemas.runs import (
    FeedbackCreate,
    LessonsOut,
    LessonsRequest,
    MessageBatchCreate,
    MessageBatchOut,
    MessageCreate,
    RunCreate,
    RunDetailOut,
    RunFeedbackOut,
    RunListQuery,
    RunMessageOut,
    RunOut,
    RunSearchRequest,
    RunSearchResponse,
    RunUpdate,
)
from app.services import run_lessons, runs

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=RunOut,
    responses=problem_responses(422),
    summary="Create a run",
)
async def create_run(
    body: RunCreate,
    request: Request,
    response: Response,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
    settings: SettingsDep,
) -> RunOut:
    """Start the record of one task run; it is embedded by `task_id` and `summary`, and
    linked `mentions` to the entities they name."""
    row = await runs.create_run(
        session,
        tenant_id=tenant_id,
        embedder=embedder,
        data=body,
        mentions=settings.auto_links.mentions,
    )
    locate(request, response, f"/v1/runs/{row.id}")
    return run_out(row)


@router.get("", response_model=Page[RunOut], responses=problem_responses(422), summary="List runs")
async def list_runs(
    session: SessionDep,
    tenant_id: TenantDep,
    query: Annotated[RunListQuery, Query()],
    memory_filter: RunFilterQuery = None,
) -> Page[RunOut]:
    """The tenant's runs, newest first; `filter` keeps those it admits."""
    return page_out(
        await runs.list_runs(
            session, tenant_id=tenant_id, query=query, memory_filter=memory_filter
        ),
        run_out,
    )


@router.post(
    "/search",
    response_model=RunSearchResponse,
    responses=problem_responses(422),
    summary="Runs similar to a text, with their feedback",
)
async def search_runs(
    body: RunSearchRequest,
    session: SessionDep,
    searcher: SearcherDep,
) -> RunSearchResponse:
    """Runs ranked by the best cosine similarity of the run itself (task and summary) or any
    of its messages to `query`, each with all its feedback. The failure loop: a critic marks
    a run `success: false` and rates it low; an agent then asks for `success: false` runs
    similar to its task and plans an improvement from their feedback."""
    return run_search_out(
        await runs.search_runs(
            session,
            searcher=searcher,
            request=body,
        )
    )


@router.post(
    "/lessons",
    response_model=LessonsOut,
    responses=problem_responses(422),
    summary="Turn failed runs' critic feedback into candidate rules",
)
async def learn_lessons(
    body: LessonsRequest, session: SessionDep, tenant_id: TenantDep, embedder: EmbedderDep
) -> LessonsOut:
    """Each critic feedback with a rationale, rated at most `max_rating`, on a run marked
    `success: false`, that has not become a rule yet, becomes a candidate rule
    "When doing task <task_id>: <rationale>" (tag `run-lesson`, in `scope`), linked
    `derived_from` the feedback and the run; the feedback's `lesson_rule_id` names it.
    At most 100 per call; call again for more."""
    rules = await run_lessons.learn_from_failures(
        session, tenant_id=tenant_id, embedder=embedder, request=body
    )
    return LessonsOut(rules_created=len(rules), rule_ids=[rule.id for rule in rules])


@router.get(
    "/{run_id}",
    response_model=RunDetailOut,
    responses=problem_responses(404, 422),
    summary="Get a run with its messages and feedback",
)
async def get_run(run_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> RunDetailOut:
    """The run, its messages in append order and its feedback oldest first."""
    return run_detail_out(await runs.get_run(session, tenant_id=tenant_id, run_id=run_id))


@router.patch(
    "/{run_id}",
    response_model=RunOut,
    responses=problem_responses(404, 422),
    summary="Finish a run or correct its outcome",
)
async def update_run(
    run_id: uuid.UUID,
    body: RunUpdate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> RunOut:
    """Set `finished_at`, `score_numeric`, `success` or `summary`; omitted fields stay.

    Giving an unfinished run its outcome (`success`, true or false) finishes it now unless
    `finished_at` says when, as the MCP tool `run_finish` does; a finished run keeps its
    time."""
    return run_out(
        await runs.update_run(
            session, tenant_id=tenant_id, embedder=embedder, run_id=run_id, data=body
        )
    )


@router.delete(
    "/{run_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    response_model=None,
    responses=problem_responses(404, 422),
    summary="Delete a run for good",
)
async def delete_run(run_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> Response:
    """Delete the run with its messages and feedback, the links to and from any of them
    (a run lesson's `derived_from` provenance) and their events, in one transaction. What
    stays is one content-free `run_deleted` event; rules learned from the run stay (erase
    with `POST /v1/erasures {"run_id": ...}` to take them too). 404 when the tenant has no
    such run."""
    await runs.delete_run(session, tenant_id=tenant_id, run_id=run_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


def _locate_run(request: Request, response: Response, run_id: uuid.UUID) -> None:
    """Point a 201's Location at the run (an error's own response carries none)."""
    locate(request, response, f"/v1/runs/{run_id}")


# A route that adds to a run: 201, and its Location is the run, read with what was added.
added_to_run = partial(
    router.post,
    status_code=status.HTTP_201_CREATED,
    responses=problem_responses(404, 422),
    dependencies=[Depends(_locate_run)],
)


@added_to_run("/{run_id}/messages", response_model=RunMessageOut, summary="Append a message")
async def append_message(
    run_id: uuid.UUID,
    body: MessageCreate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> RunMessageOut:
    """Append one message; `token_count` defaults to an estimate (characters / 4). `Location`
    is the run, which is read with its messages."""
    [row] = await runs.append_messages(
        session, tenant_id=tenant_id, embedder=embedder, run_id=run_id, items=[body]
    )
    return run_message_out(row)


@added_to_run(
    "/{run_id}/messages/batch",
    response_model=MessageBatchOut,
    summary="Append many messages at once",
)
async def append_messages(
    run_id: uuid.UUID,
    body: MessageBatchCreate,
    session: SessionDep,
    tenant_id: TenantDep,
    embedder: EmbedderDep,
) -> MessageBatchOut:
    """Append up to 1000 messages in one transaction, in order: all or none. `Location` is
    the run, which is read with its messages."""
    return message_batch_out(
        await runs.append_messages(
            session, tenant_id=tenant_id, embedder=embedder, run_id=run_id, items=body.items
        )
    )


@added_to_run("/{run_id}/feedback", response_model=RunFeedbackOut, summary="Add feedback")
async def add_feedback(
    run_id: uuid.UUID, body: FeedbackCreate, session: SessionDep, tenant_id: TenantDep
) -> RunFeedbackOut:
    """A critic's or human's rating (0 worst to 1 best) and rationale. `Location` is the run,
    which is read with its feedback."""
    return run_feedback_out(
        await runs.add_feedback(session, tenant_id=tenant_id, run_id=run_id, data=body)
    )
