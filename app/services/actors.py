"""Who caused the work at hand: the API key of a request, or the job a worker runs.

Set once where the caller is known (the tenant dependency, the MCP tool call, the worker
claiming a job) and read by `events.record` and `jobs.enqueue`, so no service signature has
to carry it. A context variable: each request and each job runs in its own task.
"""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    """`name` goes to memory_events.actor, `key_id` to memory_events.actor_key_id;
    `butlers` are the only butlers a limited key reaches (empty: every butler)."""

    name: str | None
    key_id: uuid.UUID | None
    butlers: tuple[str, ...] = ()

    @property
    def limited(self) -> bool:
        """True for a key limited to some butlers."""
        return bool(self.butlers)


ANONYMOUS = Actor("anonymous", None)
SYSTEM = Actor(None, None)

_current: ContextVar[Actor] = ContextVar("engram_actor", default=SYSTEM)


def for_key(key_id: uuid.UUID, butlers: tuple[str, ...] = ()) -> Actor:
    """A request authenticated with this API key (limited to `butlers`, if any)."""
    return Actor(f"key:{key_id}", key_id, butlers)


def for_job(job_id: uuid.UUID, key_id: uuid.UUID | None) -> Actor:
    """A job, on behalf of the key that enqueued it (None for a scheduled system job)."""
    return Actor(f"job:{job_id}", key_id)


def current() -> Actor:
    """The actor of the running request or job; SYSTEM when none was set."""
    return _current.get()


def become(actor: Actor) -> None:
    """Make `actor` the current one for the rest of this task (a request's dependency)."""
    _current.set(actor)


@contextmanager
def acting_as(actor: Actor) -> Iterator[None]:
    """Make `actor` the current one inside the block."""
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)
