"""Rules through HTTP: defaults, feedback formulas, maturity moves, inversion, forget."""

import uuid

import pytest

from tests.support.factories import harmful, store_rule


async def helpful(client, rule_id, times=1):
    for _ in range(times):
        response = await client.post(f"/v1/rules/{rule_id}/helpful")
        assert response.status_code == 200, response.text
    return response.json()


async def set_rule(sql, rule_id, **columns):
    assignments = ", ".join(f"{name} = :{name}" for name in columns)
    await sql(f"UPDATE rules SET {assignments} WHERE id = :id", id=uuid.UUID(rule_id), **columns)


async def test_new_rule_is_candidate_with_spec_defaults(client):
    rule = await store_rule(client)
    assert rule["maturity"] == "candidate"
    assert rule["confidence"] == 0.5
    assert rule["decay_rate"] == 0.01
    assert rule["effectiveness_score"] == 0.0
    assert (rule["applied_count"], rule["success_count"], rule["harmful_count"]) == (0, 0, 0)
    assert rule["scope"] == "global" and rule["permanence"] == "standard"
    assert rule["last_applied_at"] is None


async def test_helpful_mark_counts_and_recalculates(client, sql):
    rule = await store_rule(client)
    await harmful(client, rule["id"])
    after = await helpful(client, rule["id"])
    assert after["applied_count"] == 2
    assert after["success_count"] == 1
    assert after["effectiveness_score"] == pytest.approx(1 / 2)
    assert after["last_applied_at"] is not None
    rows = await sql("SELECT outcome, rule_id FROM rule_applications ORDER BY created_at")
    assert [r["outcome"] for r in rows] == ["harmful", "helpful"]
    assert all(r["rule_id"] == uuid.UUID(rule["id"]) for r in rows)


async def test_harmful_mark_uses_four_times_penalty(client):
    rule = await store_rule(client)
    await helpful(client, rule["id"], times=3)
    after = await harmful(client, rule["id"], reason="user asked for English")
    assert after["applied_count"] == 4
    assert after["harmful_count"] == 1
    assert after["effectiveness_score"] == pytest.approx(3 / (3 + 4 * 1 + 0.01))
    assert after["metadata"] == {"harmful_reasons": ["user asked for English"]}


async def test_rule_application_records_reason_and_context(client, sql):
    rule = await store_rule(client)
    await client.post(
        f"/v1/rules/{rule['id']}/harmful", json={"reason": "too long", "context": {"session": "s1"}}
    )
    [row] = await sql("SELECT outcome, reason, context FROM rule_applications")
    assert (row["outcome"], row["reason"], row["context"]) == (
        "harmful",
        "too long",
        {"session": "s1"},
    )


async def test_five_helpful_marks_promote_candidate_to_established(client, sql):
    rule = await store_rule(client)
    fourth = await helpful(client, rule["id"], times=4)
    assert fourth["maturity"] == "candidate"
    fifth = await helpful(client, rule["id"])
    assert fifth["maturity"] == "established"
    [event] = await sql(
        "SELECT payload FROM memory_events WHERE event_type = 'rule_maturity_changed'"
    )
    assert (event["payload"]["from_maturity"], event["payload"]["to_maturity"]) == (
        "candidate",
        "established",
    )


async def test_candidate_with_low_effectiveness_is_not_promoted(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], applied_count=9, success_count=4)
    after = await helpful(client, rule["id"])  # 5 / 10 = 0.5 < 0.6
    assert after["success_count"] == 5
    assert after["maturity"] == "candidate"


async def test_established_rule_thirty_days_old_becomes_proven(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], maturity="established", applied_count=14, success_count=14)
    await sql(
        "UPDATE rules SET created_at = now() - interval '31 days' WHERE id = :id",
        id=uuid.UUID(rule["id"]),
    )
    after = await helpful(client, rule["id"])
    assert after["maturity"] == "proven"


async def test_young_established_rule_is_not_proven(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], maturity="established", applied_count=20, success_count=20)
    after = await helpful(client, rule["id"])
    assert after["maturity"] == "established"


async def test_harmful_mark_demotes_proven_to_established(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], maturity="proven", applied_count=15, success_count=15)
    after = await harmful(client, rule["id"])  # 15 / 19.01 = 0.789 < 0.8
    assert after["maturity"] == "established"


async def test_harmful_mark_demotes_established_to_candidate(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], maturity="established", applied_count=5, success_count=5)
    after = await harmful(client, rule["id"])  # 5 / 9.01 = 0.555 < 0.6
    assert after["maturity"] == "candidate"


async def test_harmful_mark_keeps_established_above_threshold(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], maturity="established", applied_count=7, success_count=7)
    after = await harmful(client, rule["id"])  # 7 / 11.01 = 0.636
    assert after["maturity"] == "established"


async def test_third_harmful_mark_flags_inversion(client, sql):
    rule = await store_rule(client)
    second = await harmful(client, rule["id"], times=2)
    assert second["needs_inversion"] is False
    third = await harmful(client, rule["id"])
    assert third["needs_inversion"] is True
    [row] = await sql(
        "SELECT count(*) AS n FROM memory_events WHERE event_type = 'rule_inversion_flagged'"
    )
    assert row["n"] == 1


async def test_effective_rule_with_three_harmful_marks_is_not_flagged(client, sql):
    rule = await store_rule(client)
    await set_rule(sql, rule["id"], applied_count=20, success_count=20)
    after = await harmful(client, rule["id"], times=3)  # 20 / 32.01 = 0.62
    assert after["needs_inversion"] is False


async def test_inversion_rewrites_content_and_keeps_original(client, sql):
    rule = await store_rule(client, content="Always reply in French")
    await harmful(client, rule["id"], reason="user speaks German")
    await harmful(client, rule["id"], reason="confused the user")
    await harmful(client, rule["id"])
    [before] = await sql(
        "SELECT embedding::text AS e FROM rules WHERE id = :id", id=uuid.UUID(rule["id"])
    )
    response = await client.post(f"/v1/rules/{rule['id']}/invert")
    assert response.status_code == 200
    inverted = response.json()
    assert inverted["maturity"] == "anti_pattern"
    assert inverted["content"] == (
        "ANTI-PATTERN: Do NOT Always reply in French. This caused problems because: "
        "user speaks German; confused the user"
    )
    assert inverted["original_content"] == "Always reply in French"
    assert inverted["needs_inversion"] is False
    assert inverted["metadata"] == {"harmful_reasons": ["user speaks German", "confused the user"]}
    [after] = await sql(
        "SELECT embedding::text AS e, search_vector::text AS sv FROM rules WHERE id = :id",
        id=uuid.UUID(rule["id"]),
    )
    assert after["e"] != before["e"]
    assert "'anti'" in after["sv"] and "'german'" in after["sv"]
    [event] = await sql("SELECT payload FROM memory_events WHERE event_type = 'rule_inverted'")
    assert event["payload"]["from_maturity"] == "candidate"


async def test_harmful_reasons_show_in_the_rules_metadata_oldest_first(client):
    rule = await store_rule(client, content="Reply in French", metadata={"team": "support"})
    first = await harmful(client, rule["id"], reason="user speaks German")
    assert first["metadata"] == {"team": "support", "harmful_reasons": ["user speaks German"]}
    await harmful(client, rule["id"])
    await helpful(client, rule["id"])
    await harmful(client, rule["id"], reason="confused the user")
    expected = {"team": "support", "harmful_reasons": ["user speaks German", "confused the user"]}
    read = (await client.get(f"/v1/rules/{rule['id']}")).json()
    [listed] = (await client.get("/v1/rules")).json()["items"]
    confirmed = (await client.post(f"/v1/rules/{rule['id']}/confirm")).json()
    [found] = (
        await client.post("/v1/search", json={"query": "reply in French", "types": ["rule"]})
    ).json()["results"]
    [recalled] = (await client.post("/v1/recall", json={"topic": "reply in French"})).json()[
        "results"
    ]
    forgotten = (await client.post(f"/v1/rules/{rule['id']}/forget")).json()
    for shown in (read, listed, confirmed, found, recalled, forgotten):
        assert shown["metadata"] == expected
    other = await store_rule(client, content="Be brief")
    assert (await helpful(client, other["id"]))["metadata"] == {}


async def test_inverting_an_unflagged_rule_is_409(client):
    rule = await store_rule(client)
    response = await client.post(f"/v1/rules/{rule['id']}/invert")
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"


async def test_inverting_twice_is_409(client):
    rule = await store_rule(client)
    await harmful(client, rule["id"], times=3)
    assert (await client.post(f"/v1/rules/{rule['id']}/invert")).status_code == 200
    assert (await client.post(f"/v1/rules/{rule['id']}/invert")).status_code == 409


async def test_forget_rule_sets_flag_and_blocks_feedback(client, sql):
    rule = await store_rule(client)
    forgotten = (await client.post(f"/v1/rules/{rule['id']}/forget")).json()
    assert forgotten["forgotten"] is True and forgotten["forgotten_at"] is not None
    assert forgotten["metadata"] == {}
    assert (await client.get("/v1/rules")).json()["items"] == []
    listed = (await client.get("/v1/rules", params={"include_forgotten": True})).json()["items"]
    assert [r["id"] for r in listed] == [rule["id"]]
    assert (await client.post(f"/v1/rules/{rule['id']}/helpful")).status_code == 409
    [row] = await sql("SELECT count(*) AS n FROM memory_events WHERE event_type = 'rule_forgotten'")
    assert row["n"] == 1


async def test_confirm_rule_resets_decay(client, sql):
    rule = await store_rule(client)
    await sql(
        "UPDATE rules SET last_confirmed_at = now() - interval '30 days' WHERE id = :id",
        id=uuid.UUID(rule["id"]),
    )
    stale = (await client.get(f"/v1/rules/{rule['id']}")).json()
    assert stale["effective_confidence"] == pytest.approx(0.5 * 0.7408182, rel=1e-4)
    confirmed = (await client.post(f"/v1/rules/{rule['id']}/confirm")).json()
    assert confirmed["effective_confidence"] == pytest.approx(0.5, abs=1e-5)


async def test_get_rule_bumps_reference_and_unknown_is_404(client):
    rule = await store_rule(client)
    assert (await client.get(f"/v1/rules/{rule['id']}")).json()["reference_count"] == 1
    assert (await client.get(f"/v1/rules/{uuid.uuid4()}")).status_code == 404
    assert (await client.post(f"/v1/rules/{uuid.uuid4()}/harmful")).status_code == 404


async def test_list_rules_filters_by_scope_and_maturity(client, sql):
    a = await store_rule(client, content="Be concise", scope="work")
    b = await store_rule(client, content="Use metric units")
    await set_rule(sql, b["id"], maturity="established")

    async def ids(**params):
        return {r["id"] for r in (await client.get("/v1/rules", params=params)).json()["items"]}

    assert await ids(scope="work") == {a["id"]}
    assert await ids(maturity="established") == {b["id"]}
    assert await ids() == {a["id"], b["id"]}


async def test_harmful_reason_is_bounded(client):
    rule = await store_rule(client)
    response = await client.post(f"/v1/rules/{rule['id']}/harmful", json={"reason": "x" * 2001})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "body.reason"
