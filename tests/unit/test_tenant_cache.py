"""The API-key cache: how long a revoked key can keep working, and its size bound."""

from app.services.api_keys import TenantCache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_is_served_until_its_ttl_then_looked_up_again():
    clock = Clock()
    cache = TenantCache(30.0, clock=clock)
    cache.put("h", "acme")
    clock.now = 29.9
    assert cache.get("h") == "acme"
    clock.now = 30.0
    assert cache.get("h") is None


def test_a_zero_ttl_caches_nothing():
    cache = TenantCache(0.0)
    cache.put("h", "acme")
    assert cache.get("h") is None


def test_the_oldest_entries_go_past_the_size_bound():
    cache = TenantCache(30.0, max_entries=2, clock=Clock())
    for key in ("a", "b", "c"):
        cache.put(key, key.upper())
    assert [cache.get(key) for key in ("a", "b", "c")] == [None, "B", "C"]
