"""Per-key limits: the token bucket and the bytes-in-flight cap, on a fake clock."""

from app.config import LimitSettings
from app.ratelimit import CallerLimits, caller_of


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limits(**fields) -> tuple[CallerLimits, Clock]:
    clock = Clock()
    return CallerLimits(LimitSettings(**fields), clock=clock), clock


def test_a_burst_is_allowed_then_the_rate_applies():
    state, clock = limits(requests_per_second=2, burst=3)
    assert [state.take_request("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert state.take_request("k") == 0.5
    clock.now += 0.5
    assert state.take_request("k") == 0.0


def test_each_key_has_its_own_bucket():
    state, _ = limits(requests_per_second=1, burst=1)
    assert state.take_request("a") == 0.0
    assert state.take_request("a") > 0
    assert state.take_request("b") == 0.0


def test_zero_rate_means_unlimited():
    state, _ = limits(requests_per_second=0, burst=1)
    assert all(state.take_request("k") == 0.0 for _ in range(1000))


def test_bytes_in_flight_are_capped_and_given_back():
    state, _ = limits(bytes_in_flight=100)
    assert state.reserve_bytes("k", 60)
    assert not state.reserve_bytes("k", 60)
    assert state.reserve_bytes("other", 60)
    state.release_bytes("k", 60)
    assert state.reserve_bytes("k", 60)


def test_one_body_larger_than_the_cap_still_passes_when_nothing_is_in_flight():
    state, _ = limits(bytes_in_flight=100)
    assert state.reserve_bytes("k", 500)
    assert not state.reserve_bytes("k", 1)


def test_the_caller_is_the_key_hash_for_both_headers_else_the_address():
    bearer = caller_of({"headers": [(b"authorization", b"Bearer egk_abc")]})
    header = caller_of({"headers": [(b"x-api-key", b"egk_abc")]})
    assert bearer == header and bearer.startswith("key:") and "egk_abc" not in bearer
    assert caller_of({"headers": [], "client": ("10.1.2.3", 5)}) == "addr:10.1.2.3"
