"""Fair sharing of the model's threads: per-tenant queues of bounded chunks, round robin.

A request's texts are cut into chunks of at most `chunk_size` texts; each chunk is one
model call. A worker takes one chunk from the tenant at the head of the rotation and
then moves on, so a tenant that arrives while another tenant's big batch runs waits for
at most the chunk in progress. A cancelled request's chunks that have not started are
dropped.

Inside a tenant, chunks come in two lanes: a search's query or a single write (`bulk` off)
is served before the chunks its tenant's batches still have queued (`bulk` on: a batch of
memories, a background job), so a tenant importing its history still finds and stores at
once; within a lane, first come first served.

When the chunk taken leaves room (`max_texts`, `max_tokens`), the next chunks in the
rotation that fit join the same model call: eight clients' single queries cost one call of
eight texts, not eight calls, and the rotation order is unchanged.

With `workers` > 1, model calls run side by side, but never two of one tenant's: while a
tenant's big batch holds one worker, the others are left to the other tenants, whose
searches then start at once instead of after the call in progress. The one exception is the
tenant's own search or single write: it may start beside its batch's call.

`background_workers` run only a big batch's further chunks (a tenant's queued `bulk` work
that would not fit one call, with none of its searches or single writes queued), beside its
call on a worker, at the lowest CPU priority (nice 19):
on an idle machine the batch then uses a second core, while any other work, another
tenant's search included, takes that core first. A tenant's single queries never go there;
they wait to share its next call, which costs less than several small calls.

A call that joined several requests and failed for its texts' sake (the run raised an error
whose `outage` is False: the model refused a text, or answered it badly) is run again one
request at a time, so one tenant's text fails only that tenant's request. `run` is told
whether any request of the call is live (not `background` work, such as the embedding
backlog), so a model that notes its failures for live callers can leave background ones out.
"""

import asyncio
import itertools
import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from app.core.errors import Unavailable
from app.embedding.vectors import Vectors

EventKind = Literal["queued", "started", "dropped"]
LOWEST_PRIORITY = 19

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkEvent:
    """One entry of the scheduler's record: a chunk queued, started or dropped."""

    kind: EventKind
    tenant_id: str
    size: int
    bulk: bool = False


@dataclass(eq=False)
class _Chunk:
    tenant_id: str
    texts: list[str]
    loop: asyncio.AbstractEventLoop
    future: "asyncio.Future[Vectors]"
    bulk: bool
    background: bool = False


class _TenantQueue:
    """A tenant's queued chunks: searches' and single writes' first, then its batches'."""

    def __init__(self) -> None:
        self.first: deque[_Chunk] = deque()
        self.bulk: deque[_Chunk] = deque()

    def __len__(self) -> int:
        return len(self.first) + len(self.bulk)

    def __iter__(self) -> Iterator[_Chunk]:
        return itertools.chain(self.first, self.bulk)

    def append(self, chunk: _Chunk) -> None:
        """Queue `chunk` at the end of its lane."""
        (self.bulk if chunk.bulk else self.first).append(chunk)

    def head(self) -> _Chunk:
        """The chunk served next."""
        return self.first[0] if self.first else self.bulk[0]

    def popleft(self) -> _Chunk:
        """Take the chunk served next."""
        return self.first.popleft() if self.first else self.bulk.popleft()

    def without(self, doomed: set[int]) -> "_TenantQueue":
        """This queue without the chunks whose futures' ids are in `doomed`."""
        kept = _TenantQueue()
        for chunk in self:
            if id(chunk.future) not in doomed:
                kept.append(chunk)
        return kept


class FairScheduler:
    """Runs model calls on worker threads, serving tenants' queues in turn."""

    def __init__(
        self,
        run: Callable[[list[str], bool], Vectors],
        *,
        on_idle: Callable[[], None] | None = None,
        record_size: int = 1024,
        max_texts: int = 1,
        max_tokens: int = 0,
        cost: Callable[[str], int] = len,
        workers: int = 1,
        background_workers: int = 0,
    ) -> None:
        self._run = run
        self._on_idle = on_idle
        self._max_texts = max_texts
        self._max_tokens = max_tokens
        self._cost = cost
        self._queues: OrderedDict[str, _TenantQueue] = OrderedDict()
        self._last_tenant: str | None = None
        # (tenant, bulk) of the chunks of the calls on the workers
        self._running: set[tuple[str, bool]] = set()
        self._background: set[str] = set()  # tenants with a call on a background worker
        self._condition = threading.Condition()
        self._worker_count = workers
        self._background_count = background_workers
        self._workers: list[threading.Thread] = []
        self._closed = False
        self.record: deque[ChunkEvent] = deque(maxlen=record_size)

    @property
    def pending_chunks(self) -> int:
        """Chunks queued and not yet started."""
        with self._condition:
            return sum(len(queue) for queue in self._queues.values())

    def submit(
        self,
        *,
        tenant_id: str,
        chunks: Sequence[list[str]],
        bulk: bool = False,
        background: bool = False,
    ) -> "list[asyncio.Future[Vectors]]":
        """Queue `chunks` for `tenant_id`, behind its searches and single writes when `bulk`
        (`background`: no live caller waits for them); one future per chunk, resolved on this
        loop."""
        if not chunks:
            return []
        loop = asyncio.get_running_loop()
        queued = [
            _Chunk(tenant_id, texts, loop, loop.create_future(), bulk, background and bulk)
            for texts in chunks
        ]
        with self._condition:
            if self._closed:
                # The service is stopping: the caller's retry reaches a server that is not.
                raise Unavailable("the embedding model is shutting down", retry_after=5)
            self._start_worker()
            queue = self._queues.setdefault(tenant_id, _TenantQueue())
            for chunk in queued:
                queue.append(chunk)
                self.record.append(ChunkEvent("queued", tenant_id, len(chunk.texts), bulk))
            self._condition.notify_all()
        return [chunk.future for chunk in queued]

    def drop(self, futures: "Sequence[asyncio.Future[Vectors]]") -> None:
        """Remove the chunks of `futures` that have not started yet."""
        doomed = {id(future) for future in futures}
        with self._condition:
            for tenant_id in list(self._queues):
                queue = self._queues[tenant_id]
                kept = queue.without(doomed)
                for chunk in queue:
                    if id(chunk.future) in doomed:
                        self.record.append(
                            ChunkEvent("dropped", tenant_id, len(chunk.texts), chunk.bulk)
                        )
                if kept:
                    self._queues[tenant_id] = kept
                else:
                    del self._queues[tenant_id]
        for future in futures:
            future.cancel()

    def close(self) -> None:
        """Let the worker thread finish the queued chunks and stop; refuse new ones."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def _start_worker(self) -> None:
        """Start the worker threads on first use (lock held)."""
        while len(self._workers) < self._worker_count + self._background_count:
            background = len(self._workers) >= self._worker_count
            name = f"embedding-{'background-' if background else ''}{len(self._workers)}"
            worker = threading.Thread(target=self._work, args=(background,), daemon=True, name=name)
            self._workers.append(worker)
            worker.start()

    def _next_call(self, background: bool) -> list[_Chunk] | None:
        """Block until a tenant this worker may serve has a chunk queued; take it, and the
        chunks after it in the rotation while they fit one call; mark their tenants running.
        None once closed and drained."""
        with self._condition:
            taken: list[_Chunk] = []
            while not taken:
                tenant_id = self._next_tenant(background)
                while tenant_id is None:
                    if self._closed and not self._queues:
                        return None
                    self._condition.wait()
                    tenant_id = self._next_tenant(background)
                self._take(taken, self._pop(tenant_id))
            while (tenant_id := self._next_tenant(background)) is not None:
                if not self._fits(taken, self._queues[tenant_id].head()):
                    break
                self._take(taken, self._pop(tenant_id))
            self._mark(taken, background, running=True)
            return taken

    def _mark(self, call: list[_Chunk], background: bool, *, running: bool) -> None:
        """Note the tenants (and lanes) of `call` as running on this kind of worker, or no
        longer (lock held)."""
        if background:
            tenants = {chunk.tenant_id for chunk in call}
            if running:
                self._background |= tenants
            else:
                self._background -= tenants
        else:
            lanes = {(chunk.tenant_id, chunk.bulk) for chunk in call}
            if running:
                self._running |= lanes
            else:
                self._running -= lanes

    def _ready(self, tenant_id: str, background: bool) -> bool:
        """Whether this kind of worker may serve `tenant_id`'s next chunk: a background
        worker only a batch, with no call of the tenant on one; a worker a search or single
        write with none of the tenant's on a worker, a batch's chunk with no call of the
        tenant on a worker at all (lock held)."""
        if background:
            return tenant_id not in self._background and self._batch_queued(tenant_id)
        if self._queues[tenant_id].first:
            return (tenant_id, False) not in self._running
        return not {(tenant_id, False), (tenant_id, True)} & self._running

    def _take(self, taken: list[_Chunk], chunk: _Chunk) -> None:
        """Add `chunk` to the call unless its request was cancelled (lock held)."""
        kind: EventKind = "dropped" if chunk.future.cancelled() else "started"
        self.record.append(ChunkEvent(kind, chunk.tenant_id, len(chunk.texts), chunk.bulk))
        if kind == "started":
            taken.append(chunk)

    def _fits(self, taken: list[_Chunk], chunk: _Chunk) -> bool:
        """Whether `chunk` joins the call of `taken` within the text and padded-token bounds."""
        texts = [text for queued in (*taken, chunk) for text in queued.texts]
        return (
            len(texts) <= self._max_texts
            and len(texts) * max(map(self._cost, texts)) <= self._max_tokens
        )

    def _next_tenant(self, background: bool) -> str | None:
        """The next tenant in the rotation, after the one served last, whose next chunk this
        kind of worker may serve (`_ready`); None if there is none (lock held)."""
        ready = [tenant_id for tenant_id in self._queues if self._ready(tenant_id, background)]
        if not ready:
            return None
        if ready[0] == self._last_tenant and len(ready) > 1:
            self._queues.move_to_end(ready[0])
            return ready[1]
        return ready[0]

    def _batch_queued(self, tenant_id: str) -> bool:
        """Whether the tenant's queue starts with a batch's chunks and its first two would not
        fit one call (lock held)."""
        queue = self._queues[tenant_id]
        return (
            not queue.first
            and len(queue.bulk) > 1
            and not self._fits([queue.bulk[0]], queue.bulk[1])
        )

    def _pop(self, tenant_id: str) -> _Chunk:
        """The first chunk of `tenant_id`'s queue (lock held)."""
        queue = self._queues[tenant_id]
        chunk = queue.popleft()
        if not queue:
            del self._queues[tenant_id]
        self._last_tenant = tenant_id
        return chunk

    def _work(self, background: bool) -> None:
        if background:
            _lower_priority()
        while True:
            call = self._next_call(background)
            if call is None:
                return
            self._run_call(call)
            with self._condition:
                self._mark(call, background, running=False)
                self._condition.notify_all()
            if self._on_idle is not None and not self.pending_chunks:
                self._on_idle()

    def _run_call(self, call: list[_Chunk]) -> None:
        """Run one model call and hand each request its vectors or the error; a call of
        several requests failing for its texts' sake runs again one request at a time."""
        live = not all(chunk.background for chunk in call)
        try:
            vectors = self._run([text for chunk in call for text in chunk.texts], live)
        except Exception as error:  # handed to the awaiting requests
            if len(call) > 1 and getattr(error, "outage", True) is False:
                for chunk in call:
                    self._run_call([chunk])
                return
            for chunk in call:
                _deliver(chunk, None, error)
        else:
            start = 0
            for chunk in call:
                _deliver(chunk, vectors[start : start + len(chunk.texts)], None)
                start += len(chunk.texts)


def _lower_priority() -> None:
    """Give the calling thread the lowest CPU priority (Linux schedules threads apart)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST_PRIORITY)
    except (AttributeError, OSError) as error:  # other systems: a normal-priority thread
        logger.warning("background model worker keeps its CPU priority: %s", error)


def _deliver(chunk: _Chunk, vectors: Vectors | None, error: Exception | None) -> None:
    def settle() -> None:
        if chunk.future.done():
            return
        if error is not None:
            chunk.future.set_exception(error)
        else:
            chunk.future.set_result(vectors or [])

    try:
        chunk.loop.call_soon_threadsafe(settle)
    except RuntimeError:
        pass  # the loop has closed; nobody is waiting any more
