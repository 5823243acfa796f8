"""Filters recently counted, with whether they admitted too many memories of a type to rank
exactly, so that a search repeating one (an agent filtering every call on its user or
project) does not count again.

A remembered answer lives `TTL_SECONDS`. If a filter's memories grow past the threshold
meanwhile, its searches rank them exactly a little longer (the same results, found the
slower way); if most are deleted, its searches walk the indexes for that long instead of
ranking the few left exactly, and a walk stops after `hnsw_max_scan_tuples` rows.
"""

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

TTL_SECONDS = 30.0
CAPACITY = 4096


class BroadFilters:
    """A bounded, expiring map of (tenant, type, filter values, threshold) keys to whether
    the filter admitted at least the threshold."""

    def __init__(
        self,
        *,
        ttl: float = TTL_SECONDS,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl, self._capacity, self._clock = ttl, capacity, clock
        self._until: OrderedDict[Hashable, tuple[float, bool]] = OrderedDict()

    def get(self, key: Hashable) -> bool | None:
        """Whether `key` was broad when remembered less than the TTL ago; None if not known."""
        found = self._until.get(key)
        if found is None:
            return None
        if found[0] <= self._clock():
            del self._until[key]
            return None
        return found[1]

    def remember(self, key: Hashable, broad: bool) -> None:
        """Remember `key` for the TTL, forgetting the oldest key past the capacity."""
        self._until[key] = (self._clock() + self._ttl, broad)
        self._until.move_to_end(key)
        while len(self._until) > self._capacity:
            self._until.popitem(last=False)

    def clear(self) -> None:
        """Forget every key."""
        self._until.clear()


def broad_key(
    memory_type: str, params: dict[str, Any], butlers: tuple[str, ...], shape: Hashable, below: int
) -> Hashable:
    """The key of one type's count: everything the counted rows depend on."""
    return (memory_type, json.dumps(params, sort_keys=True, default=str), butlers, shape, below)


BROAD = BroadFilters()
