"""The decay sweep: threshold transitions of facts and rules, with explicit timestamps."""

import math
from datetime import UTC, datetime, timedelta

import pytest

from app.formulas.lifecycle import effective_confidence
from app.worker import scheduler, worker
from tests.support.factories import store_fact, store_rule
from tests.support.jobs import job_context, run_job

FACT_RATE = 0.008  # standard permanence
RULE_RATE = 0.01
RULE_CONFIDENCE = 0.5


def days_for(effective, confidence, rate):
    """Days since confirmation at which confidence * exp(-rate * days) == effective."""
    return math.log(confidence / effective) / rate


async def _fact(client, sql, predicate, *, days=None, permanence="standard", fading=False):
    fact_id = (
        await store_fact(client, "user", predicate, f"value of {predicate}", permanence=permanence)
    )["id"]
    if days is not None:
        await _confirmed_days_ago(sql, "facts", fact_id, days)
    if fading:
        await sql("UPDATE facts SET fading_since = now() WHERE id = CAST(:id AS uuid)", id=fact_id)
    return fact_id


async def _rule(client, sql, content, *, days):
    rule_id = (await store_rule(client, content))["id"]
    await _confirmed_days_ago(sql, "rules", rule_id, days)
    return rule_id


async def _confirmed_days_ago(sql, table, memory_id, days):
    await sql(
        f"UPDATE {table} SET last_confirmed_at = now() - make_interval(secs => :secs) "
        "WHERE id = CAST(:id AS uuid)",
        secs=days * 86400.0,
        id=memory_id,
    )


async def _decay(client, app, settings):
    return await run_job(client, job_context(app, settings), "decay")


async def _fact_state(client, fact_id):
    fact = (await client.get(f"/v1/facts/{fact_id}")).json()
    return fact["validity"], "fading" if fact["fading"] else None


async def _rule_state(client, rule_id):
    rule = (await client.get(f"/v1/rules/{rule_id}")).json()
    return rule["forgotten"] or None, "fading" if rule["fading"] else None


@pytest.mark.parametrize(
    "effective, expected",
    [
        (0.0499, ("expired", None)),
        (0.0501, ("active", "fading")),
        (0.1999, ("active", "fading")),
        (0.2001, ("active", None)),
    ],
    ids=["just-below-0.05", "just-above-0.05", "just-below-0.2", "just-above-0.2"],
)
async def test_fact_transition_at_each_threshold(client, app, sql, settings, effective, expected):
    fact_id = await _fact(client, sql, "p", days=days_for(effective, 1.0, FACT_RATE))
    await _decay(client, app, settings)
    assert await _fact_state(client, fact_id) == expected


@pytest.mark.parametrize(
    "effective, expected",
    [
        (0.0499, (True, None)),
        (0.0501, (None, "fading")),
        (0.1999, (None, "fading")),
        (0.2001, (None, None)),
    ],
    ids=["just-below-0.05", "just-above-0.05", "just-below-0.2", "just-above-0.2"],
)
async def test_rule_transition_at_each_threshold(client, app, sql, settings, effective, expected):
    rule_id = await _rule(
        client, sql, "Do it.", days=days_for(effective, RULE_CONFIDENCE, RULE_RATE)
    )
    await _decay(client, app, settings)
    assert await _rule_state(client, rule_id) == expected


async def test_result_counts_each_transition(client, app, sql, settings):
    await _fact(client, sql, "gone", days=400)  # exp(-3.2) = 0.041
    await _fact(client, sql, "fading", days=300)  # exp(-2.4) = 0.091
    await _fact(client, sql, "fine", days=100)  # exp(-0.8) = 0.449
    await _fact(client, sql, "back", days=1, fading=True)
    await _fact(client, sql, "forever", days=5000, permanence="permanent")
    await _rule(client, sql, "Forgotten.", days=300)  # 0.5 * exp(-3) = 0.025
    await _rule(client, sql, "Fading.", days=150)  # 0.5 * exp(-1.5) = 0.112
    job = await _decay(client, app, settings)
    assert job["status"] == "succeeded"
    assert job["result"] == {
        "facts_evaluated": 4,
        "facts_expired": 1,
        "facts_fading": 1,
        "facts_recovered": 1,
        "rules_evaluated": 2,
        "rules_forgotten": 1,
        "rules_fading": 1,
        "rules_recovered": 0,
        "events_recorded": 5,
    }


async def test_each_transition_is_recorded_in_memory_events(client, app, sql, settings):
    gone = await _fact(client, sql, "gone", days=400)
    rule = await _rule(client, sql, "Fading.", days=150)
    job = await _decay(client, app, settings)
    events = await sql(
        "SELECT event_type, actor, tenant_id, payload FROM memory_events "
        "WHERE actor = 'decay_sweep' ORDER BY event_type"
    )
    assert [
        (
            e["event_type"],
            e["actor"],
            e["tenant_id"],
            e["payload"]["memory_id"],
            e["payload"]["job_id"],
        )
        for e in events
    ] == [
        ("fact_expired", "decay_sweep", "default", gone, job["id"]),
        ("rule_fading", "decay_sweep", "default", rule, job["id"]),
    ]
    now = datetime.now(UTC)
    expected_fact = effective_confidence(1.0, FACT_RATE, now - timedelta(days=400), now)
    expected_rule = effective_confidence(RULE_CONFIDENCE, RULE_RATE, now - timedelta(days=150), now)
    assert events[0]["payload"]["effective_confidence"] == pytest.approx(expected_fact, rel=1e-4)
    assert events[1]["payload"]["effective_confidence"] == pytest.approx(expected_rule, rel=1e-4)


async def test_a_second_sweep_records_no_repeated_transition(client, app, sql, settings):
    await _fact(client, sql, "fading", days=300)
    await _decay(client, app, settings)
    job = await _decay(client, app, settings)
    assert (job["result"]["facts_evaluated"], job["result"]["facts_fading"]) == (1, 0)
    assert job["result"]["events_recorded"] == 0


async def test_fading_fact_recovers_above_0_2(client, app, sql, settings):
    fact_id = await _fact(client, sql, "back", days=10, fading=True)
    await _decay(client, app, settings)
    fact = (await client.get(f"/v1/facts/{fact_id}")).json()
    assert fact["fading"] is False


async def test_never_confirmed_decaying_fact_counts_as_zero_and_expires(client, app, sql, settings):
    fact_id = await _fact(client, sql, "never")
    await sql("UPDATE facts SET last_confirmed_at = NULL")
    await _decay(client, app, settings)
    assert await _fact_state(client, fact_id) == ("expired", None)


async def test_permanent_facts_never_decay(client, app, sql, settings):
    fact_id = await _fact(client, sql, "forever", days=10_000, permanence="permanent")
    await sql("UPDATE facts SET last_confirmed_at = NULL")
    job = await _decay(client, app, settings)
    assert job["result"]["facts_evaluated"] == 0
    assert await _fact_state(client, fact_id) == ("active", None)


async def test_api_decay_job_is_bounded_to_the_callers_tenant(client, app, sql, settings):
    await sql(
        "INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key, "
        "content, last_confirmed_at) "
        "VALUES ('other', 'u', 'p', 'u', 'p', 'c', now() - interval '400 days')"
    )
    job = await _decay(client, app, settings)
    assert job["result"]["facts_evaluated"] == 0
    rows = await sql("SELECT validity FROM facts WHERE tenant_id = 'other'")
    assert rows[0]["validity"] == "active"


async def test_scheduled_decay_sweeps_every_tenant(client, app, sql, settings):
    await sql(
        "INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key, "
        "content, last_confirmed_at) "
        "VALUES ('other', 'u', 'p', 'u', 'p', 'c', now() - interval '400 days')"
    )
    mine = await _fact(client, sql, "gone", days=400)
    ctx = job_context(app, settings)
    await scheduler.tick(ctx)
    await worker.drain(ctx)
    rows = await sql("SELECT tenant_id, validity FROM facts ORDER BY tenant_id")
    assert [(r["tenant_id"], r["validity"]) for r in rows] == [
        ("default", "expired"),
        ("other", "expired"),
    ]
    assert await _fact_state(client, mine) == ("expired", None)
    [job] = await sql("SELECT tenant_id, status, result FROM jobs WHERE kind = 'decay'")
    assert (job["tenant_id"], job["status"], job["result"]["facts_expired"]) == (
        None,
        "succeeded",
        2,
    )


async def test_scheduled_decay_gives_each_tenant_its_own_transaction(client, app, sql, settings):
    for tenant in ("t1", "t2"):
        await sql(
            "INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key, "
            "content, last_confirmed_at) "
            "VALUES (:t, 'u', 'p', 'u', 'p', 'c', now() - interval '400 days')",
            t=tenant,
        )
    ctx = job_context(app, settings)
    await scheduler.tick(ctx)
    await worker.drain(ctx)
    rows = await sql("SELECT tenant_id, validity, xmin::text AS tx FROM facts ORDER BY 1")
    assert [(r["tenant_id"], r["validity"]) for r in rows] == [("t1", "expired"), ("t2", "expired")]
    assert rows[0]["tx"] != rows[1]["tx"]
