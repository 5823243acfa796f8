"""/v1/jobs: durable background jobs (consolidation, decay sweep, episode cleanup)."""

import uuid
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Response
from sqlalchemy.ext.asyncio import AsyncSession

from app.core.errors import problem_responses
from app.deps import SessionDep, TenantDep
from app.responses.jobs import job_out
from app.responses.pages import page_out
from app.schemas.arcs import ArcBoundaryJobCreate
from app.schemas.common import Page
from app.schemas.jobs import (
    CleanupJobCreate,
    JobListQuery,
    JobOut,
    PiiScrubJobCreate,
)
from app.services import jobs

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])

ACCEPTED = "Accepted: the job is queued; poll `GET /v1/jobs/{id}` (the Location header)."


# A route that queues a job: 202 with the job and its Location.
queue_route = partial(
    router.post,
    status_code=202,
    response_model=JobOut,
    response_description=ACCEPTED,
    responses=problem_responses(422),
)


@dataclass(frozen=True)
class _Queue:
    """Queues a job of the caller's tenant; the answer's Location is the job."""

    response: Response
    session: AsyncSession
    tenant_id: str

    async def __call__(self, kind: str, params: dict[str, Any]) -> JobOut:
        job = job_out(
            await jobs.enqueue(self.session, tenant_id=self.tenant_id, kind=kind, params=params)
        )
        self.response.headers["Location"] = f"/v1/jobs/{job.id}"
        return job


def _queue_of(response: Response, session: SessionDep, tenant_id: TenantDep) -> _Queue:
    return _Queue(response, session, tenant_id)


QueueDep = Annotated[_Queue, Depends(_queue_of, scope="function")]


@queue_route("/consolidation", summary="Queue an LLM consolidation job")
async def queue_consolidation(queue: QueueDep) -> JobOut:
    """Turn the tenant's pending episodes into facts and rules, one butler group at a time.

    Without a configured LLM (`llm.base_url` unset) the job is a dry run: it groups and counts
    the pending episodes and says so in its result.
    """
    return await queue("consolidation", {})


@queue_route("/decay", summary="Queue a decay sweep")
async def queue_decay(queue: QueueDep) -> JobOut:
    """Apply decay thresholds to the tenant's facts and rules.

    effective_confidence < 0.05 expires a fact or flags a rule forgotten; below 0.2 marks it
    fading (`fading: true`); a fading one back at 0.2 or more loses the flag.
    """
    return await queue("decay", {})


@queue_route("/cleanup", summary="Queue an episode cleanup")
async def queue_cleanup(
    queue: QueueDep, body: Annotated[CleanupJobCreate | None, Body()] = None
) -> JobOut:
    """Delete the tenant's expired episodes, then, above `max_entries`, its oldest
    consolidated episodes and after them its oldest expired unconsolidated ones; an episode
    that has not expired is never deleted for capacity (`capacity_deleted`, of which
    `capacity_unconsolidated_deleted`). Expired working memories are deleted too
    (`working_memories_deleted`).

    So that nothing is lost silently, at TTL only episodes that were
    consolidated or explicitly forgotten are deleted (`expired_deleted`). An expired episode
    that was never consolidated gets a grace period (the server's `unconsolidated_grace_days`,
    30 by default) for consolidation to take it, then goes too (`unconsolidated_deleted`);
    meanwhile the result counts it in `expired_kept_unconsolidated`. Each batch's
    `episodes_deleted` event lists the episodes deleted unconsolidated
    (`unconsolidated_episode_ids`). `/v1/stats` shows what is waiting.

    Runs finished more than the server's `runs.retention_days` ago (365 by default; the
    result's `run_retention_days`; 0 keeps runs) go with their messages, feedback,
    links and events (`runs_deleted`, `run_messages_deleted`, `run_feedback_deleted`); each
    batch writes a `runs_deleted` event naming them. Rules learned from them stay."""
    return await queue("cleanup", (body or CleanupJobCreate()).model_dump())


@queue_route("/pii-scrub", summary="Queue a PII scrub")
async def queue_pii_scrub(
    queue: QueueDep, body: Annotated[PiiScrubJobCreate | None, Body()] = None
) -> JobOut:
    """Replace every match of the configured `runs.pii_patterns` by `[pii:<pattern
    name>:<salted sha256, 16 hex digits>]` (salt: `runs.pii_hash_salt`, else the tenant's own
    random salt, made once and kept in the database) in the tenant's run messages, runs
    (summary and meta), run feedback rationales, rules (run lessons among them: content,
    original content, metadata) and episodes (content and metadata), and re-embed and
    re-index what changed. Rows checked once are skipped unless `rescan` is true. The
    scheduler runs one for every tenant each `jobs.pii_scrub_interval_hours` (24). The
    result counts `<kind>_checked` and `<kind>_rewritten` for messages, runs, feedback,
    rules and episodes, and `matches`."""
    return await queue("pii_scrub", (body or PiiScrubJobCreate()).model_dump())


@queue_route("/arc-boundaries", summary="Queue an arc boundary proposal")
async def queue_arc_boundaries(body: ArcBoundaryJobCreate, queue: QueueDep) -> JobOut:
    """Cluster the scope's live episodes by occurred_at, cutting wherever two consecutive
    episodes are more than `gap_minutes` apart (default `arcs.boundary_gap_minutes`, 120), and
    create one draft arc (type `arcs.proposed_type`) per cluster, its episodes as key events.
    Clusters smaller than `arcs.min_episodes`, already overlapped by an arc of the scope, or
    whose last episode is less than one gap old are skipped and counted in the result."""
    return await queue("arc_boundaries", body.model_dump(exclude_none=True))


@router.get("", response_model=Page[JobOut], responses=problem_responses(422), summary="List jobs")
async def list_jobs(
    session: SessionDep, tenant_id: TenantDep, query: Annotated[JobListQuery, Query()]
) -> Page[JobOut]:
    """The tenant's jobs, newest first."""
    return page_out(await jobs.list_jobs(session, tenant_id=tenant_id, query=query), job_out)


@router.get(
    "/{job_id}", response_model=JobOut, responses=problem_responses(404, 422), summary="Get a job"
)
async def get_job(job_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> JobOut:
    """Status, timings, result figures and errors of one job."""
    return job_out(await jobs.get_job(session, tenant_id=tenant_id, job_id=job_id))
