"""The default PII patterns: what each one replaces, and time linear in the text's length
on texts built to make a backtracking pattern retry from every position."""

import time

import pytest

from app.core.config import DEFAULT_PII_PATTERNS
from app.worker.pii import Scrubber

# A bound an old machine meets with room to spare for 50,000 characters of a linear pattern
# (a few milliseconds); a pattern that retries from every position takes seconds.
BOUND_SECONDS = 0.2


HOSTILE: dict[str, dict[str, object]] = {
    "email": {
        "letters": lambda n: "a" * n,
        "letters and digits": lambda n: ("a1" * n)[:n],
        "dots": lambda n: ("a." * n)[:n],
        "no top-level domain": lambda n: "a@" + "b" * n,
        "runs before an at sign": lambda n: (("x" * 64 + "@" + "b" * 200) * n)[:n],
        "long local part": lambda n: "a" * n + "@b",
        "long domain": lambda n: "a" * 64 + "@" + "b" * n,
    },
    "phone": {
        "digits": lambda n: "1" * n,
        "separators": lambda n: "1" + " " * n + "a",
        "digits and spaces": lambda n: ("1 " * n)[:n] + "1a",
        "parentheses": lambda n: "(" * n,
        "plus signs": lambda n: ("+1" * n)[:n],
    },
    "ipv4": {
        "digits": lambda n: "1" * n,
        "dotted digits": lambda n: ("1." * n)[:n],
        "almost addresses": lambda n: ("1.1.1.1a" * n)[:n],
    },
}


def _seconds(scrubber: Scrubber, texts: list[str], *, tries: int = 5) -> list[float]:
    """The fastest of `tries` scrubs of each text, the texts taken in turn, so that a busy
    machine slows them alike."""
    best = [float("inf")] * len(texts)
    for _ in range(tries):
        for index, text in enumerate(texts):
            started = time.perf_counter()
            scrubber.scrub(text)
            best[index] = min(best[index], time.perf_counter() - started)
    return best


@pytest.mark.parametrize(
    ("name", "shape"), [(name, shape) for name, shapes in HOSTILE.items() for shape in shapes]
)
def test_each_default_pattern_takes_linear_time_on_hostile_text(name: str, shape: str) -> None:
    scrubber = Scrubber.of({name: DEFAULT_PII_PATTERNS[name]}, "salt")
    make = HOSTILE[name][shape]
    assert callable(make)
    [once] = _seconds(scrubber, [make(50_000)], tries=1)
    assert once < BOUND_SECONDS, f"{name} on {shape}: {once:.3f} s for 50,000 characters"
    small, large = _seconds(scrubber, [make(50_000), make(200_000)])
    # Four times the text, about four times the time (a quadratic pattern takes sixteen).
    assert large < 8 * small + 0.02, f"{name} on {shape}: {small:.4f} s, then {large:.4f} s"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("mail ann@example.com today", ["ann@example.com"]),
        ("<first.last+tag@mail.example.co.uk>", ["first.last+tag@mail.example.co.uk"]),
        ("a-b_c%d@x-y.org.", ["a-b_c%d@x-y.org"]),
        ("not an address: ann@localhost, @example.com, ann@.", []),
        ("x@y.com@z.org", ["x@y.com"]),
        # Addresses written one against another are each replaced.
        ("x@y.com-foo@bar.com", ["x@y.com", "-foo@bar.com"]),
        ("x@y.com.z@w.org", ["x@y.com", ".z@w.org"]),
        ("ann@example.com1bob@example.org", ["ann@example.com", "1bob@example.org"]),
        ("a@b.cc" * 3, ["a@b.cca", "b.cca@b.cc"]),
    ],
)
def test_the_email_pattern_replaces_what_it_always_did(text: str, found: list[str]) -> None:
    scrubber = Scrubber.of({"email": DEFAULT_PII_PATTERNS["email"]}, "salt")
    expected = text
    for value in found:
        expected = expected.replace(value, scrubber.token("email", value), 1)
    assert scrubber.scrub(text) == (expected, len(found))


def test_a_long_local_part_goes_whole() -> None:
    address = "a" * 300 + "@example.com"
    scrubber = Scrubber.of({"email": DEFAULT_PII_PATTERNS["email"]}, "salt")
    assert scrubber.scrub(f"to {address}.") == (f"to {scrubber.token('email', address)}.", 1)
