"""Per-caller limits: the token bucket, the bytes-in-flight cap, who a request counts against
and the bound on the table of callers, on a fake clock."""

import hashlib
import secrets
from collections.abc import Callable

from app.core.config import LimitSettings
from app.web.ratelimit import Caller, CallerLimits, caller_of


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limits(max_callers: int = 1000, **fields) -> tuple[CallerLimits, Clock]:
    clock = Clock()
    return CallerLimits(LimitSettings(**fields), clock=clock, max_callers=max_callers), clock


def key(name: str) -> Caller:
    return Caller.for_key(hashlib.sha256(name.encode()).hexdigest())


def request(
    path: str = "/v1/facts",
    address: str = "203.0.113.7",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> dict:
    return {"type": "http", "path": path, "headers": headers or [], "client": (address, 4000)}


NOBODY: Callable[[str], bool] = lambda key_hash: False  # noqa: E731


def test_a_burst_is_allowed_then_the_rate_applies():
    state, clock = limits(requests_per_second=2, burst=3)
    assert [state.take_request(key("k")) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert state.take_request(key("k")) == 0.5
    clock.now += 0.5
    assert state.take_request(key("k")) == 0.0


def test_each_key_has_its_own_bucket():
    state, _ = limits(requests_per_second=1, burst=1)
    assert state.take_request(key("a")) == 0.0
    assert state.take_request(key("a")) > 0
    assert state.take_request(key("b")) == 0.0


def test_zero_rate_means_unlimited():
    state, _ = limits(requests_per_second=0, burst=1, unverified_requests_per_second=0)
    assert all(state.take_request(key("k")) == 0.0 for _ in range(1000))
    assert all(state.take_request(Caller.unverified("10.0.0.1")) == 0.0 for _ in range(1000))


def test_bytes_in_flight_are_capped_and_given_back():
    state, _ = limits(bytes_in_flight=100)
    assert state.reserve_bytes(key("k"), 60)
    assert not state.reserve_bytes(key("k"), 60)
    assert state.reserve_bytes(key("other"), 60)
    state.release_bytes(key("k"), 60)
    assert state.reserve_bytes(key("k"), 60)


def test_one_body_larger_than_the_cap_still_passes_when_nothing_is_in_flight():
    state, _ = limits(bytes_in_flight=100)
    assert state.reserve_bytes(key("k"), 500)
    assert not state.reserve_bytes(key("k"), 1)


def test_a_known_key_counts_against_its_hash_for_both_headers():
    secret = b"egk_abc"
    known = {hashlib.sha256(secret).hexdigest()}.__contains__
    bearer = caller_of(
        request(headers=[(b"authorization", b"Bearer egk_abc")]),
        known_key=known,
        auth_disabled=False,
    )
    header = caller_of(
        request(headers=[(b"x-api-key", b"egk_abc")]), known_key=known, auth_disabled=False
    )
    assert bearer == header and not bearer.strict
    assert "egk_abc" not in bearer.name


def test_an_unknown_key_counts_against_its_address_under_the_strict_limit():
    caller = caller_of(
        request(headers=[(b"x-api-key", b"egk_new")]), known_key=NOBODY, auth_disabled=False
    )
    assert caller == Caller.unverified("203.0.113.7") and caller.strict


def test_without_a_key_a_request_counts_against_its_address():
    caller = caller_of(request(address="10.1.2.3"), known_key=NOBODY, auth_disabled=False)
    assert caller == Caller.address("10.1.2.3") and not caller.strict


def test_the_bearer_key_wins_over_x_api_key_as_authentication_reads_them():
    known = {hashlib.sha256(b"egk_bearer").hexdigest()}.__contains__
    caller = caller_of(
        request(headers=[(b"x-api-key", b"egk_other"), (b"authorization", b"Bearer egk_bearer")]),
        known_key=known,
        auth_disabled=False,
    )
    assert caller == Caller.for_key(hashlib.sha256(b"egk_bearer").hexdigest())


def test_console_pages_count_against_the_address_and_sign_in_strictly():
    page = caller_of(
        request("/ui/search", headers=[(b"cookie", b"engram_console=x")]),
        known_key=NOBODY,
        auth_disabled=False,
    )
    sign_in = caller_of(request("/ui/sign-in"), known_key=NOBODY, auth_disabled=False)
    assert page == Caller.address("203.0.113.7")
    assert sign_in == Caller.unverified("203.0.113.7")


def test_without_authentication_every_request_counts_against_its_address():
    caller = caller_of(
        request(headers=[(b"x-api-key", b"egk_anything")]), known_key=NOBODY, auth_disabled=True
    )
    assert caller == Caller.address("203.0.113.7")


def test_ipv6_addresses_of_one_64_prefix_share_a_bucket():
    one = caller_of(request(address="2001:db8:1:2::1"), known_key=NOBODY, auth_disabled=False)
    other = caller_of(
        request(address="2001:db8:1:2:ffff::9"), known_key=NOBODY, auth_disabled=False
    )
    elsewhere = caller_of(request(address="2001:db8:1:3::1"), known_key=NOBODY, auth_disabled=False)
    assert one == other != elsewhere


def test_random_keys_are_refused_at_the_address_rate_and_the_table_stays_small():
    state, clock = limits(unverified_requests_per_second=5, unverified_burst=10)
    allowed = 0
    for n in range(10_000):  # 10,000 requests in 10 seconds, each with a new key
        clock.now = 1000.0 + n / 1000
        caller = caller_of(
            request(headers=[(b"x-api-key", secrets.token_hex(16).encode())]),
            known_key=NOBODY,
            auth_disabled=False,
        )
        allowed += state.take_request(caller) == 0.0
    # The burst, then 5 a second for the 10 seconds.
    assert 59 <= allowed <= 60
    assert len(state) == 1


def test_the_table_of_callers_is_capped_and_forgets_the_least_recently_seen():
    state, clock = limits(max_callers=100, requests_per_second=1, burst=1)
    regular = Caller.address("192.0.2.1")
    assert state.take_request(regular) == 0.0
    for n in range(10_000):
        clock.now += 0.001
        state.take_request(Caller.address(f"10.{n // 65536}.{n // 256 % 256}.{n % 256}"))
        if n % 50 == 0:
            state.take_request(regular)  # seen often, so never the least recent
        assert len(state) <= 100
    # The regular caller's bucket was kept: it is still empty at this rate.
    assert state.take_request(regular) > 0


def test_a_caller_with_a_body_in_flight_is_not_forgotten():
    state, _ = limits(max_callers=2, bytes_in_flight=100)
    uploading = key("uploading")
    assert state.reserve_bytes(uploading, 90)
    for n in range(10):
        state.take_request(Caller.address(f"10.0.0.{n}"))
    assert len(state) <= 2
    assert not state.reserve_bytes(uploading, 20)


def test_a_verified_request_paid_for_by_the_address_is_charged_to_its_key():
    state, _ = limits(requests_per_second=0.001, burst=2)
    state.charge(key("k"))
    assert state.take_request(key("k")) == 0.0
    assert state.take_request(key("k")) > 0
