"""Filters recently counted as admitting many memories of a type, so that a search repeating
one (an agent filtering every call on its user or project) walks the indexes without
counting again.

Only the broad answer is remembered: counting a selective filter is cheap, and its exact
ranking costs more than the count. A remembered answer lives `TTL_SECONDS`; if a filter's
memories are deleted meanwhile, its searches walk the indexes for that long instead of
ranking the few left exactly (the same results, found the slower way).
"""

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

TTL_SECONDS = 30.0
CAPACITY = 4096


class BroadFilters:
    """A bounded, expiring set of (tenant, type, filter values, limit) keys."""

    def __init__(self, *, ttl: float = TTL_SECONDS, capacity: int = CAPACITY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl, self._capacity, self._clock = ttl, capacity, clock
        self._until: OrderedDict[Hashable, float] = OrderedDict()

    def holds(self, key: Hashable) -> bool:
        """Whether `key` was remembered less than the TTL ago."""
        until = self._until.get(key)
        if until is None:
            return False
        if until <= self._clock():
            del self._until[key]
            return False
        return True

    def remember(self, key: Hashable) -> None:
        """Remember `key` for the TTL, forgetting the oldest key past the capacity."""
        self._until[key] = self._clock() + self._ttl
        self._until.move_to_end(key)
        while len(self._until) > self._capacity:
            self._until.popitem(last=False)

    def clear(self) -> None:
        """Forget every key."""
        self._until.clear()


def broad_key(memory_type: str, params: dict[str, Any], butlers: tuple[str, ...],
              shape: Hashable, below: int) -> Hashable:
    """The key of one type's count: everything the counted rows depend on."""
    return (memory_type, json.dumps(params, sort_keys=True, default=str), butlers, shape,
            below)


BROAD = BroadFilters()
