"""Task runs: records, messages, feedback and the failure loop's search."""

import math
import uuid
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.core.clock import now_utc
from app.core.errors import InvalidInput, found
from app.core.scope import side_session
from app.core.text import preprocess_search_query, preprocess_text
from app.embedding import Embedder
from app.models import Run, RunFeedback, RunMessage
from app.repositories import erasure as erasure_rows
from app.repositories import rows as record_rows
from app.repositories import runs as run_rows
from app.repositories.erasure import Counts
from app.repositories.runs import RunFilters
from app.repositories.search import candidates as search_rows
from app.retrieval.query_vectors import embed_query, serving_vector
from app.retrieval.searcher import Searcher
from app.schemas.filters import MemoryFilter
from app.schemas.runs import (
    FeedbackCreate,
    MessageCreate,
    RunCreate,
    RunListQuery,
    RunSearchRequest,
    RunUpdate,
)
from app.services import butler_limits, events
from app.services.embeddings import embed_texts
from app.services.events import Event
from app.services.mentions import link_mentions

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """About how many model tokens `text` holds (characters / 4, at least 1)."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


def run_text(task_id: str, summary: str | None) -> str:
    """The text a run is embedded and keyword-indexed by."""
    return preprocess_text(f"{task_id}: {summary}" if summary else task_id)


def _event(event_type: str, tenant_id: str, run_id: uuid.UUID, **payload: object) -> Event:
    return Event(event_type, tenant_id, {"run_id": str(run_id), **payload})


@dataclass(frozen=True)
class RunDetail:
    """A run with its messages (append order) and feedback (oldest first)."""

    run: Run
    messages: list[RunMessage]
    feedback: list[RunFeedback]


async def create_run(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    data: RunCreate,
    mentions: bool = True,
) -> Run:
    """Store a run, embedded by its task and summary; with `mentions` linked to the entities
    they name. Runs belong to no butler: Forbidden for a key limited to butlers, as is every
    change to a run."""
    butler_limits.check_unlimited("recording a run")
    if data.finished_at is not None and data.finished_at < (data.started_at or now_utc()):
        raise InvalidInput("finished_at is before started_at", field="finished_at")
    text = run_text(data.task_id, data.summary)
    embedded = await embed_texts(session, embedder, [text], tenant_id=tenant_id)
    values = data.model_dump(exclude={"started_at"}, exclude_none=True)
    if data.started_at is not None:
        values["started_at"] = data.started_at
    if data.finished_at is None and data.success is not None:
        # An outcome finishes a run, as it does on update.
        values["finished_at"] = max(now_utc(), data.started_at or now_utc())
    run = await record_rows.insert_searchable(
        session,
        Run,
        values={**values, "tenant_id": tenant_id, **embedded.columns(0)},
        search_text=text,
    )
    if mentions:
        await link_mentions(
            session, tenant_id=tenant_id, memory_type="run", ids=[run.id], texts=[text]
        )
    await events.record(session, [_event("run_created", tenant_id, run.id, task_id=run.task_id)])
    return run


async def require_run(
    session: AsyncSession, *, tenant_id: str, run_id: uuid.UUID, for_update: bool = False
) -> Run:
    """The tenant's run; NotFound (on `run_id`) otherwise."""
    run = await record_rows.one_of_tenant(
        session, Run, tenant_id=tenant_id, row_id=run_id, for_update=for_update
    )
    return found(run, f"run {run_id} not found", field="run_id")


async def update_run(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    run_id: uuid.UUID,
    data: RunUpdate,
    finish: bool = False,
) -> Run:
    """Set the outcome fields given; a new summary re-embeds the run.

    An unfinished run given its outcome (`success`), or asked to `finish`, is finished now
    unless `finished_at` says when; a finished run keeps its time.
    """
    butler_limits.check_unlimited("changing a run")
    values = data.model_dump(exclude_unset=True)
    vector: dict[str, object] = {}
    text = None
    if data.summary is not None:
        async with side_session(session) as lookup:
            task_id = (await require_run(lookup, tenant_id=tenant_id, run_id=run_id)).task_id
        text = run_text(task_id, data.summary)
        embedded = await embed_texts(session, embedder, [text], tenant_id=tenant_id)
        vector = embedded.columns(0)
    current = await require_run(session, tenant_id=tenant_id, run_id=run_id, for_update=True)
    if data.finished_at is not None and data.finished_at < current.started_at:
        raise InvalidInput("finished_at is before started_at", field="finished_at")
    if (
        "finished_at" not in values
        and current.finished_at is None
        and (finish or data.success is not None)
    ):
        values["finished_at"] = max(now_utc(), current.started_at)
    run = await run_rows.update_run(
        session, tenant_id=tenant_id, run_id=run_id, values={**values, **vector}, search_text=text
    )
    run = found(run, f"run {run_id} not found", field="run_id")
    await events.record(session, [_event("run_updated", tenant_id, run.id, fields=sorted(values))])
    return run


async def delete_run(session: AsyncSession, *, tenant_id: str, run_id: uuid.UUID) -> Counts:
    """Delete the run for good with its messages, feedback, links and events; one
    content-free `run_deleted` event stays. Rules learned from it stay, without the link."""
    butler_limits.check_unlimited("deleting a run")
    await require_run(session, tenant_id=tenant_id, run_id=run_id, for_update=True)
    counts = await erasure_rows.delete_runs(session, tenant_id=tenant_id, ids=[run_id])
    await events.record(
        session, [Event("run_deleted", tenant_id, {"memory_type": "run", "memory_id": str(run_id)})]
    )
    return counts


async def get_run(session: AsyncSession, *, tenant_id: str, run_id: uuid.UUID) -> RunDetail:
    """The run with its messages and feedback."""
    run = await require_run(session, tenant_id=tenant_id, run_id=run_id)
    return RunDetail(
        run,
        await run_rows.messages_of(session, tenant_id=tenant_id, run_ids=[run_id]),
        await run_rows.feedback_of(session, tenant_id=tenant_id, run_ids=[run_id]),
    )


async def list_runs(
    session: AsyncSession,
    *,
    tenant_id: str,
    query: RunListQuery,
    memory_filter: MemoryFilter | None = None,
) -> tuple[list[Run], str | None]:
    """A page of the tenant's runs, newest first."""
    filters = RunFilters(task_id=query.task_id, success=query.success, memory_filter=memory_filter)
    return await run_rows.list_runs(
        session, tenant_id=tenant_id, filters=filters, limit=query.limit, cursor=query.cursor
    )


async def append_messages(
    session: AsyncSession,
    *,
    tenant_id: str,
    embedder: Embedder,
    run_id: uuid.UUID,
    items: list[MessageCreate],
) -> list[RunMessage]:
    """Append messages to the run in one transaction, embedded in one batch."""
    butler_limits.check_unlimited("recording a run's messages")
    embedded = await embed_texts(
        session, embedder, [item.content for item in items], tenant_id=tenant_id
    )
    # Locked so that concurrent appends to one run keep their batches contiguous.
    await require_run(session, tenant_id=tenant_id, run_id=run_id, for_update=True)
    rows = await run_rows.insert_messages(
        session,
        [
            {
                "tenant_id": tenant_id,
                "run_id": run_id,
                "role": item.role,
                "content": item.content,
                "token_count": item.token_count
                if item.token_count is not None
                else estimate_tokens(item.content),
                **embedded.columns(index),
                "search_text": preprocess_text(item.content),
            }
            for index, item in enumerate(items)
        ],
    )
    await events.record(
        session, [_event("run_messages_appended", tenant_id, run_id, count=len(rows))]
    )
    return rows


async def add_feedback(
    session: AsyncSession, *, tenant_id: str, run_id: uuid.UUID, data: FeedbackCreate
) -> RunFeedback:
    """Record a critic's or human's feedback on the run."""
    butler_limits.check_unlimited("recording feedback on a run")
    await require_run(session, tenant_id=tenant_id, run_id=run_id)
    row = await run_rows.insert_feedback(
        session,
        {
            "tenant_id": tenant_id,
            "run_id": run_id,
            "source": data.source,
            "rating": data.rating,
            "rationale": data.rationale,
        },
    )
    await events.record(
        session,
        [
            _event(
                "run_feedback_added",
                tenant_id,
                run_id,
                feedback_id=str(row.id),
                source=row.source,
                rating=row.rating,
            )
        ],
    )
    return row


@dataclass(frozen=True)
class RunFound:
    """A search result: the run, its similarity, the best message and all its feedback."""

    run: Run
    similarity: float
    message: RunMessage | None
    feedback: list[RunFeedback]


async def search_runs(
    session: AsyncSession,
    *,
    searcher: Searcher,
    request: RunSearchRequest,
) -> list[RunFound]:
    """Runs whose own text or messages are most similar to the query, with their feedback.

    With `success=false` this is the failure loop's "similar past failures": each result
    carries the critic's and humans' feedback to plan an improvement from.
    """
    tenant_id, embedder, retrieval = searcher.tenant_id, searcher.embedder, searcher.retrieval
    query = preprocess_search_query(request.query)
    if not query:
        return []
    asked = await embed_query(embedder, query, tenant_id=tenant_id)
    # Filtered HNSW scans continue past rows the filters drop, as in /v1/search.
    await search_rows.configure_vector_scan(
        session,
        ef_search=max(retrieval.hnsw_ef_search, request.limit * run_rows.POOL_FACTOR),
        max_scan_tuples=retrieval.hnsw_max_scan_tuples,
    )
    vector = await serving_vector(session, embedder, asked)
    filters = RunFilters(
        task_id=request.task_id,
        success=request.success,
        agent_version=request.agent_version,
        max_rating=request.max_rating,
    )
    matches = await run_rows.similar_runs(
        session, tenant_id=tenant_id, filters=filters, vector=vector, limit=request.limit
    )
    run_ids = [match.run_id for match in matches]
    runs = await run_rows.get_runs(session, tenant_id=tenant_id, run_ids=run_ids)
    messages = await run_rows.get_messages(
        session,
        tenant_id=tenant_id,
        message_ids=[m.message_id for m in matches if m.message_id is not None],
    )
    feedback: dict[uuid.UUID, list[RunFeedback]] = {run_id: [] for run_id in run_ids}
    for row in await run_rows.feedback_of(session, tenant_id=tenant_id, run_ids=run_ids):
        feedback[row.run_id].append(row)
    return [
        RunFound(
            runs[m.run_id],
            m.similarity,
            messages.get(m.message_id) if m.message_id else None,
            feedback[m.run_id],
        )
        for m in matches
    ]
