"""Where a read's time went: a per-request collector of named stages, held in a context var.

A route starts one with `collecting(operation)`; the read path marks its boundaries with
`with stage("sql"): ...`. Outside a collection (the worker, MCP) `stage` returns one shared
no-op context manager, so the same code runs at no cost. A stage entered twice adds up.
"""

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from time import perf_counter
from types import TracebackType

# The stages a read may report, each with the words Server-Timing gives it (no commas or
# semicolons, so that a naive parser of the header splits it right).
STAGES = {
    "embed": "query embedding",
    "prepare": "serving model and scan settings",
    "sql": "candidate statement of every leg",
    "sql_records": "record candidate statements",
    "graph": "graph list",
    "fusion": "fusion",
    "load": "rows and what hits show",
    "rerank": "reranker",
    "bump": "references counted",
    "serialise": "response building and encoding",
    "total": "total",
}


class Stages:
    """The seconds each stage of one read took, in the order first entered."""

    __slots__ = ("operation", "started", "seconds", "last_end")

    def __init__(self, operation: str) -> None:
        self.operation = operation
        self.started = perf_counter()
        self.last_end = self.started
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float, *, ended: float) -> None:
        """Count `seconds` more to stage `name`, which ended at `ended` (perf_counter)."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
        self.last_end = ended

    def finish(self) -> float:
        """Count the time since the last stage ended as `serialise` (the framework validates
        and encodes the answer after the route returns) and return the total seconds."""
        now = perf_counter()
        self.add("serialise", now - self.last_end, ended=now)
        return now - self.started

    def header(self, total: float) -> str:
        """The stages and `total` as a Server-Timing value (milliseconds)."""
        parts = [_entry(name, seconds) for name, seconds in self.seconds.items()]
        parts.append(_entry("total", total))
        return ", ".join(parts)


def _entry(name: str, seconds: float) -> str:
    return f'{name};dur={seconds * 1000:.2f};desc="{STAGES.get(name, name)}"'


class _Timer:
    __slots__ = ("_stages", "_name", "_started")

    def __init__(self, stages: Stages, name: str) -> None:
        self._stages, self._name, self._started = stages, name, 0.0

    def __enter__(self) -> None:
        self._started = perf_counter()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        ended = perf_counter()
        self._stages.add(self._name, ended - self._started, ended=ended)


_UNTIMED = nullcontext()
_current: ContextVar[Stages | None] = ContextVar("engram_read_stages", default=None)


def stage(name: str) -> AbstractContextManager[None]:
    """Time the block as stage `name` of the read being collected; nothing when none is."""
    stages = _current.get()
    return _UNTIMED if stages is None else _Timer(stages, name)


@contextmanager
def collecting(operation: str) -> Iterator[Stages]:
    """Collect the stages of `operation` run inside the block."""
    stages = Stages(operation)
    token = _current.set(stages)
    try:
        yield stages
    finally:
        _current.reset(token)
