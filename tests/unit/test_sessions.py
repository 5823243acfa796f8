"""The gap rule that places episodes without a session_id in sessions."""

import uuid
from datetime import UTC, datetime, timedelta

from app.formulas.sessions import Arrival, Stored, assign_sessions, chain

T0 = datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
GAP = timedelta(minutes=15)


def minutes(n: float) -> datetime:
    return T0 + timedelta(minutes=n)


def test_a_pause_longer_than_the_gap_starts_a_session_and_order_of_arrival_does_not_matter():
    points = [("chat", minutes(m)) for m in (45, 0, 10, 25, 70)]
    assert chain(points, gap=GAP) == [0, 1, 1, 1, 2]  # 25 is exactly 15 after 10: kept


def test_groups_are_chained_apart():
    assert len(set(chain([("a", minutes(0)), ("b", minutes(1))], gap=GAP))) == 2


def test_the_stored_turn_before_wins_over_the_one_after_and_a_gap_of_both_starts_anew():
    before, after = Stored(uuid.uuid4(), minutes(0)), Stored(uuid.uuid4(), minutes(20))
    fresh = uuid.uuid4()
    sessions = assign_sessions(
        [
            Arrival("chat", minutes(10), before, after),
            Arrival("mail", minutes(18), Stored(uuid.uuid4(), minutes(0)), after),
            Arrival(
                "news",
                minutes(10),
                Stored(uuid.uuid4(), minutes(-20)),
                Stored(uuid.uuid4(), minutes(40)),
            ),
        ],
        gap=GAP,
        new_session=lambda: fresh,
    )
    assert sessions == [before.session, after.session, fresh]
