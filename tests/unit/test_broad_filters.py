"""The memory of filters lately counted as broad: it expires and stays bounded."""

from app.retrieval.broad_filters import BroadFilters, broad_key


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_remembered_filter_is_forgotten_after_the_ttl() -> None:
    clock = Clock()
    broad = BroadFilters(ttl=30, capacity=10, clock=clock)
    broad.remember("a")
    clock.now = 29.9
    assert broad.holds("a")
    clock.now = 30.0
    assert not broad.holds("a")


def test_past_its_capacity_it_forgets_the_oldest() -> None:
    broad = BroadFilters(ttl=30, capacity=2, clock=Clock())
    for key in ("a", "b", "c"):
        broad.remember(key)
    assert [broad.holds(key) for key in ("a", "b", "c")] == [False, True, True]


def test_keys_differ_by_tenant_butlers_values_and_threshold() -> None:
    base = broad_key("episode", {"tenant_id": "t", "filter_0": ["x"]}, (), ("shape",), 10)
    assert base == broad_key("episode", {"filter_0": ["x"], "tenant_id": "t"}, (),
                             ("shape",), 10)
    others = [broad_key("fact", {"tenant_id": "t", "filter_0": ["x"]}, (), ("shape",), 10),
              broad_key("episode", {"tenant_id": "u", "filter_0": ["x"]}, (), ("shape",), 10),
              broad_key("episode", {"tenant_id": "t", "filter_0": ["y"]}, (), ("shape",), 10),
              broad_key("episode", {"tenant_id": "t", "filter_0": ["x"]}, ("a",), ("shape",),
                        10),
              broad_key("episode", {"tenant_id": "t", "filter_0": ["x"]}, (), ("shape",), 5)]
    assert base not in others
