"""The API-key cache: how long a revoked key can keep working, and its size bound."""

import uuid

from app.services.api_keys import KeyOwner, TenantCache

ACME = KeyOwner("acme", uuid.uuid4())


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_is_served_until_its_ttl_then_looked_up_again():
    clock = Clock()
    cache = TenantCache(30.0, clock=clock)
    cache.put("h", ACME)
    clock.now = 29.9
    assert cache.get("h") == ACME
    clock.now = 30.0
    assert cache.get("h") is None


def test_a_zero_ttl_caches_nothing():
    cache = TenantCache(0.0)
    cache.put("h", ACME)
    assert cache.get("h") is None


def test_the_oldest_entries_go_past_the_size_bound():
    cache = TenantCache(30.0, max_entries=2, clock=Clock())
    owners = {key: KeyOwner(key.upper(), uuid.uuid4()) for key in ("a", "b", "c")}
    for key, owner in owners.items():
        cache.put(key, owner)
    assert [cache.get(key) for key in owners] == [None, owners["b"], owners["c"]]


def test_it_knows_keys_found_live_even_without_caching_their_owners():
    cache = TenantCache(0.0, max_known=2)
    cache.put("a", ACME)
    assert cache.knows("a") and not cache.knows("unknown")
    cache.forget("a")
    assert not cache.knows("a")


def test_it_knows_at_most_max_known_keys_forgetting_the_least_recently_seen():
    cache = TenantCache(30.0, max_known=2, clock=Clock())
    cache.put("a", ACME)
    cache.put("b", ACME)
    assert cache.knows("a")  # seen: "b" is now the least recent
    cache.put("c", ACME)
    assert [cache.knows(key) for key in ("a", "b", "c")] == [True, False, True]
