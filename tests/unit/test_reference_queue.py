"""The process's queue of references: counts added up per memory, each memory's waiting
references, and a bound on the memories that wait."""

import uuid
from datetime import UTC, datetime

from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import async_sessionmaker

from app.services.references import ReferenceQueue

AT = datetime(2026, 11, 29, tzinfo=UTC)


def dropped() -> float:
    return REGISTRY.get_sample_value("engram_references_dropped_total") or 0.0


def test_references_add_up_per_memory():
    queue = ReferenceQueue(async_sessionmaker(), 1.0)
    fact, rule = uuid.uuid4(), uuid.uuid4()
    queue.add([("t1", "fact", fact, AT), ("t1", "rule", rule, AT)])
    queue.add([("t1", "fact", fact, AT)])

    assert queue.waiting == 2
    assert queue.queued("t1", "fact", fact) == 2
    assert queue.queued("t1", "rule", rule) == 1
    assert queue.queued("t2", "fact", fact) == 0


def test_past_the_limit_the_longest_waiting_memory_is_dropped_and_counted():
    queue = ReferenceQueue(async_sessionmaker(), 1.0, limit=2)
    first, second, third = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    queue.add([("t1", "fact", first, AT)] * 3 + [("t1", "fact", second, AT)])
    before = dropped()

    queue.add([("t1", "fact", second, AT), ("t1", "rule", third, AT)])

    assert queue.waiting == 2
    assert queue.queued("t1", "fact", first) == 0
    assert queue.queued("t1", "fact", second) == 2
    assert queue.queued("t1", "rule", third) == 1
    assert dropped() == before + 3
