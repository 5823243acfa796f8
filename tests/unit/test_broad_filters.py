"""The memory of filters lately counted: it expires and stays bounded."""

from app.repositories.search.broad_filters import BroadFilters, broad_key


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_remembered_filter_is_forgotten_after_the_ttl() -> None:
    clock = Clock()
    broad = BroadFilters(ttl=30, capacity=10, clock=clock)
    broad.remember("a", True)
    broad.remember("b", False)
    clock.now = 29.9
    assert (broad.get("a"), broad.get("b"), broad.get("c")) == (True, False, None)
    clock.now = 30.0
    assert broad.get("a") is None


def test_past_its_capacity_it_forgets_the_oldest() -> None:
    broad = BroadFilters(ttl=30, capacity=2, clock=Clock())
    for key in ("a", "b", "c"):
        broad.remember(key, True)
    assert [broad.get(key) for key in ("a", "b", "c")] == [None, True, True]


def test_keys_differ_by_tenant_butlers_values_and_threshold() -> None:
    base = broad_key("episode", {"tenant_id": "t", "filter_0": ["x"]}, (), ("shape",), 10)
    assert base == broad_key("episode", {"filter_0": ["x"], "tenant_id": "t"}, (), ("shape",), 10)
    others = [
        broad_key("fact", {"tenant_id": "t", "filter_0": ["x"]}, (), ("shape",), 10),
        broad_key("episode", {"tenant_id": "u", "filter_0": ["x"]}, (), ("shape",), 10),
        broad_key("episode", {"tenant_id": "t", "filter_0": ["y"]}, (), ("shape",), 10),
        broad_key("episode", {"tenant_id": "t", "filter_0": ["x"]}, ("a",), ("shape",), 10),
        broad_key("episode", {"tenant_id": "t", "filter_0": ["x"]}, (), ("shape",), 5),
    ]
    assert base not in others
