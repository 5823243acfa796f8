"""Reading time expressions of a query as a window, against fixed reference times."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from app.retrieval.timewindow import parse_time_window

# A Wednesday.
REFERENCE = datetime(2023, 6, 14, 15, 30, tzinfo=UTC)


def window(query: str, reference: datetime = REFERENCE) -> tuple[str, str] | None:
    found = parse_time_window(query, reference)
    return (
        None
        if found is None
        else (found.start.date().isoformat(), (found.end - timedelta(days=1)).date().isoformat())
    )


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [
        ("what did I do yesterday", "2023-06-13", "2023-06-13"),
        ("what happened today", "2023-06-14", "2023-06-14"),
        ("where did we go last week", "2023-06-05", "2023-06-11"),
        ("plans for this week", "2023-06-12", "2023-06-18"),
        ("the hike last weekend", "2023-06-10", "2023-06-11"),
        ("what did I buy last month", "2023-05-01", "2023-05-31"),
        ("books I read last year", "2022-01-01", "2022-12-31"),
        ("what did Caroline do in May 2023", "2023-05-01", "2023-05-31"),
        ("events of march, 2021", "2021-03-01", "2021-03-31"),
        ("in May", "2023-05-01", "2023-05-31"),
        ("in December", "2022-12-01", "2022-12-31"),
        ("trips in 2022", "2022-01-01", "2022-12-31"),
        ("on May 8, 2023", "2023-05-08", "2023-05-08"),
        ("the 8th of May 2023", "2023-05-08", "2023-05-08"),
        ("last friday", "2023-06-09", "2023-06-09"),
        ("on wednesday", "2023-06-07", "2023-06-07"),
        ("two days ago", "2023-06-11", "2023-06-13"),
        ("3 weeks ago", "2023-05-21", "2023-05-27"),
        ("a month ago", "2023-05-01", "2023-05-31"),
    ],
)
def test_expressions_become_windows(query, first, last):
    assert window(query) == (first, last)


def test_a_query_without_a_time_expression_has_no_window():
    assert window("what is Caroline's favourite food") is None
    assert window("May I ask about the pottery class") is None


def test_the_window_is_in_the_reference_zone_and_echoes_the_words():
    zone = timezone(timedelta(hours=-5))
    found = parse_time_window("What did I do Yesterday?", REFERENCE.astimezone(zone))
    assert found is not None
    assert found.start == datetime(2023, 6, 13, tzinfo=zone)
    assert found.end == datetime(2023, 6, 14, tzinfo=zone)
    assert found.expression == "yesterday"


def test_an_impossible_date_is_no_window():
    assert window("on February 30, 2023") is None
