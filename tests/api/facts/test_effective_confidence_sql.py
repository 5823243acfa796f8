"""The SQL twin of effective confidence agrees with the Python formula on sample rows."""

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import column, select, text, values
from sqlalchemy.types import DateTime, Float

from app.formulas.lifecycle import effective_confidence
from app.repositories.confidence import effective_confidence_sql, effective_confidence_text

NOW = datetime(2026, 6, 1, 12, tzinfo=UTC)

SAMPLES = [
    (1.0, 0.0, None),  # permanent, never confirmed: keeps confidence
    (0.9, 0.0, NOW - timedelta(days=400)),  # permanent, long ago
    (1.0, 0.008, None),  # decaying, never confirmed: 0
    (1.0, 0.008, NOW),  # confirmed just now
    (0.8, 0.03, NOW - timedelta(days=10)),
    (0.5, 0.1, NOW - timedelta(days=30, hours=6)),
    (1.0, 0.002, NOW + timedelta(days=3)),  # confirmed "in the future": no negative age
]


async def test_sql_and_python_effective_confidence_agree(db_engine):
    rows = values(
        column("confidence", Float),
        column("decay_rate", Float),
        column("last_confirmed_at", DateTime(timezone=True)),
        name="samples",
    ).data(SAMPLES)
    stmt = select(
        effective_confidence_sql(
            rows.c.confidence, rows.c.decay_rate, rows.c.last_confirmed_at, NOW
        )
    )
    async with db_engine.connect() as conn:
        from_sql = list((await conn.execute(stmt)).scalars())
    expected = [effective_confidence(c, rate, confirmed, NOW) for c, rate, confirmed in SAMPLES]
    assert from_sql == pytest.approx(expected, rel=1e-9, abs=1e-12)


async def test_decay_sweep_text_agrees_with_python_at_the_transaction_time(db_engine):
    async with db_engine.begin() as conn:
        now = (await conn.execute(text("SELECT now()"))).scalar_one()
        samples = [(c, rate, None if at is None else now - (NOW - at)) for c, rate, at in SAMPLES]
        rows = ", ".join(
            f"(CAST(:c{i} AS float8), CAST(:r{i} AS float8), CAST(:a{i} AS timestamptz))"
            for i in range(len(samples))
        )
        params = {}
        for i, (c, rate, at) in enumerate(samples):
            params |= {f"c{i}": c, f"r{i}": rate, f"a{i}": at}
        statement = text(
            f"SELECT {effective_confidence_text('t')} FROM (VALUES {rows}) "
            "AS t(confidence, decay_rate, last_confirmed_at)"
        )
        from_sql = list((await conn.execute(statement, params)).scalars())
    expected = [effective_confidence(c, rate, at, now) for c, rate, at in samples]
    assert from_sql == pytest.approx(expected, rel=1e-9, abs=1e-12)
