"""Time expressions in a query ("yesterday", "last week", "in May 2023") as a window on
`occurred_at`: pure functions of the query and a reference time."""

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
WEEKDAYS = {name.lower(): number for number, name in enumerate(calendar.day_name)}
UNITS = {"day": 1, "week": 7}
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}

_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_NUMBER = r"(\d{1,3}|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + ")"
_WEEKDAY = "(" + "|".join(WEEKDAYS) + ")"


@dataclass(frozen=True)
class TimeWindow:
    """[start, end) in the reference time's zone, and the words that gave it."""

    start: datetime
    end: datetime
    expression: str


def _day_start(day: date, zone: tzinfo | None) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone)


def _days(first: date, last: date, zone: tzinfo | None, words: str) -> TimeWindow:
    """The window from the start of `first` to the end of `last`."""
    return TimeWindow(_day_start(first, zone), _day_start(last + timedelta(days=1), zone), words)


def _month(year: int, month: int, zone: tzinfo | None, words: str) -> TimeWindow:
    last = calendar.monthrange(year, month)[1]
    return _days(date(year, month, 1), date(year, month, last), zone, words)


def _shift_months(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBER_WORDS[text]


def _relative(query: str, today: date, zone: tzinfo | None) -> TimeWindow | None:
    if match := re.search(r"\b(yesterday|last night)\b", query):
        return _days(today - timedelta(days=1), today - timedelta(days=1), zone, match[0])
    if match := re.search(r"\b(today|this morning|tonight|this evening)\b", query):
        return _days(today, today, zone, match[0])
    if match := re.search(r"\bthe day before yesterday\b", query):
        return _days(today - timedelta(days=2), today - timedelta(days=2), zone, match[0])
    if match := re.search(_NUMBER + r" (day|week|month|year)s? ago\b", query):
        count, unit = _number(match[1]), match[2]
        if unit in UNITS:
            centre = today - timedelta(days=count * UNITS[unit])
            slack = timedelta(days=max(1, count * UNITS[unit] // 7))
            return _days(centre - slack, centre + slack, zone, match[0])
        if unit == "month":
            year, month = _shift_months(today, -count)
            return _month(year, month, zone, match[0])
        return _days(
            date(today.year - count, 1, 1), date(today.year - count, 12, 31), zone, match[0]
        )
    if match := re.search(r"\b(last|past|this) (week|month|year|weekend)\b", query):
        return _period(match[1], match[2], today, zone, match[0])
    if match := re.search(r"\b(?:last|on) " + _WEEKDAY + r"\b", query):
        back = (today.weekday() - WEEKDAYS[match[1]]) % 7 or 7
        day = today - timedelta(days=back)
        return _days(day, day, zone, match[0])
    return None


def _period(which: str, unit: str, today: date, zone: tzinfo | None, words: str) -> TimeWindow:
    if unit == "year":
        year = today.year if which == "this" else today.year - 1
        return _days(date(year, 1, 1), date(year, 12, 31), zone, words)
    if unit == "month":
        year, month = (today.year, today.month) if which == "this" else _shift_months(today, -1)
        return _month(year, month, zone, words)
    monday = today - timedelta(days=today.weekday())
    if which != "this":
        monday -= timedelta(days=7)
    if unit == "weekend":
        return _days(monday + timedelta(days=5), monday + timedelta(days=6), zone, words)
    return _days(monday, monday + timedelta(days=6), zone, words)


def _absolute(query: str, today: date, zone: tzinfo | None) -> TimeWindow | None:
    if match := re.search(_MONTH + r" (\d{1,2})(?:st|nd|rd|th)?,? " + _YEAR, query):
        return _on(int(match[3]), MONTHS[match[1]], int(match[2]), zone, match[0])
    if match := re.search(r"\b(\d{1,2})(?:st|nd|rd|th)? (?:of )?" + _MONTH + ",? " + _YEAR, query):
        return _on(int(match[3]), MONTHS[match[2]], int(match[1]), zone, match[0])
    if match := re.search(r"\b" + _MONTH + ",? (?:of )?" + _YEAR + r"\b", query):
        return _month(int(match[2]), MONTHS[match[1]], zone, match[0])
    if match := re.search(r"\b(?:in|during|of) " + _MONTH + r"(?!\w)", query):
        month = MONTHS[match[1]]
        year = today.year if month <= today.month else today.year - 1
        return _month(year, month, zone, match[0])
    if match := re.search(r"\b(?:in|during|of) " + _YEAR + r"\b", query):
        year = int(match[1])
        return _days(date(year, 1, 1), date(year, 12, 31), zone, match[0])
    return None


def _on(year: int, month: int, day: int, zone: tzinfo | None, words: str) -> TimeWindow | None:
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    return _days(found, found, zone, words)


def parse_time_window(query: str, reference: datetime) -> TimeWindow | None:
    """The first time expression of `query` read relative to `reference`, or None.

    Absolute dates ("May 8, 2023", "in May 2023", "in 2022") win over relative ones
    ("yesterday", "last week", "3 days ago", "last Friday"). A bare month ("in May") is the
    latest such month not after the reference. "N days/weeks ago" is a window around that day,
    widening with the distance.
    """
    text = " ".join(query.lower().split())
    today = reference.date()
    return _absolute(text, today, reference.tzinfo) or _relative(text, today, reference.tzinfo)
