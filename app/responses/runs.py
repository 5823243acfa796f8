"""Task runs, their messages and feedback, and run search answers."""

from app.models import Run, RunFeedback, RunMessage
from app.schemas.runs import (
    MessageBatchOut,
    RunDetailOut,
    RunFeedbackOut,
    RunMessageOut,
    RunOut,
    RunSearchHit,
    RunSearchResponse,
)
from app.services.runs import RunDetail, RunFound


def run_out(row: Run) -> RunOut:
    """A run as the API shows it (no embedding)."""
    return RunOut.model_validate(row)


def run_message_out(row: RunMessage) -> RunMessageOut:
    """A run message as the API shows it."""
    return RunMessageOut.model_validate(row)


def message_batch_out(rows: list[RunMessage]) -> MessageBatchOut:
    """Messages appended together, in order."""
    return MessageBatchOut(items=[run_message_out(row) for row in rows])


def run_feedback_out(row: RunFeedback) -> RunFeedbackOut:
    """A run's feedback as the API shows it."""
    return RunFeedbackOut.model_validate(row)


def run_detail_out(detail: RunDetail) -> RunDetailOut:
    """A run with its messages and feedback."""
    return RunDetailOut.model_validate(
        {
            **dict(run_out(detail.run)),
            "messages": [run_message_out(row) for row in detail.messages],
            "feedback": [run_feedback_out(row) for row in detail.feedback],
        }
    )


def run_search_out(found: list[RunFound]) -> RunSearchResponse:
    """Similar runs, each with its best message and its feedback."""
    return RunSearchResponse(
        results=[
            RunSearchHit.model_validate(
                {
                    **dict(run_out(item.run)),
                    "similarity": item.similarity,
                    "matched_message": run_message_out(item.message) if item.message else None,
                    "feedback": [run_feedback_out(row) for row in item.feedback],
                }
            )
            for item in found
        ]
    )
