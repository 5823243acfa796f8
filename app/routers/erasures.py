"""/v1/erasures: erase a tenant's data by selector, as a durable job."""

from fastapi import APIRouter, Response

from app.core.errors import problem_responses
from app.deps import SessionDep, TenantDep
from app.responses.jobs import job_out
from app.schemas.erasures import ErasureCreate
from app.schemas.jobs import JobOut
from app.services import erasures

router = APIRouter(prefix="/v1/erasures", tags=["data rights"])


@router.post(
    "",
    status_code=202,
    response_model=JobOut,
    response_description="Accepted: the erasure job is queued; poll "
    "`GET /v1/jobs/{id}` (the Location header).",
    responses=problem_responses(404, 422),
    summary="Erase data by selector",
)
async def request_erasure(
    body: ErasureCreate, response: Response, session: SessionDep, tenant_id: TenantDep
) -> JobOut:
    """Hard-delete everything one selector matches: `butler`, `scope`, `subject`,
    `entity_id`, `session_id`, `run_id`, `task_id`, or `tenant: true` with `confirm` set to
    the tenant id.

    Facts go with every version of their history; facts and rules consolidated from erased
    episodes go with them; links, keyword postings, rule applications (their reasons) and the
    memories' audit events go too. Each batch is one transaction, so a failed or interrupted
    job resumes where it stopped. The job's result is the receipt, counts per table
    (`deleted`); what stays is content-free tombstone events (`memories_erased` with the ids,
    `erasure_completed` with the counts) naming the key that asked. Once finished, the job's
    params keep only the selector's name, not its value. A run goes with its messages,
    feedback, links and events, and the rules learned from it. 404 when `entity_id` or
    `run_id` is not the tenant's; 422 for no selector, two selectors, or a wrong `confirm`.
    """
    job = job_out(await erasures.request_erasure(session, tenant_id=tenant_id, request=body))
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return job
