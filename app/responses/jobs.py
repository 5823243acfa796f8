"""Jobs as the API shows them."""

from app.models import Job
from app.schemas.jobs import JobOut


def job_out(job: Job) -> JobOut:
    """A job as the API shows it, with its duration once finished."""
    duration = None
    if job.started_at is not None and job.finished_at is not None:
        duration = max(0.0, (job.finished_at - job.started_at).total_seconds())
    return JobOut(
        id=job.id,
        kind=job.kind,
        status=job.status,
        params=job.params,
        result=job.result,
        errors=list(job.errors),
        attempts=job.attempts,
        created_at=job.created_at,
        scheduled_for=job.scheduled_for,
        started_at=job.started_at,
        finished_at=job.finished_at,
        duration_seconds=duration,
    )
