"""GET /v1/stats: every documented figure, and the scope filter."""

import logging
import uuid
from datetime import datetime

import pytest

from app.main import create_app
from app.services.stats import CONSOLIDATION_OFF
from tests.support.http import post


async def stats(client, **params):
    response = await client.get("/v1/stats", params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def test_empty_store_has_zero_everywhere(client):
    assert await stats(client) == {
        "scope": None,
        "episodes": {
            "total": 0,
            "unconsolidated": 0,
            "failed": 0,
            "next_retry_at": None,
            "backlog_age_hours": 0.0,
            "oldest_unconsolidated_at": None,
            "expired_unconsolidated": 0,
        },
        "facts": {"active": 0, "fading": 0, "superseded": 0, "expired": 0, "retracted": 0},
        "rules": {"candidate": 0, "established": 0, "proven": 0, "anti_pattern": 0, "forgotten": 0},
        "consolidation_configured": False,
        "warnings": [CONSOLIDATION_OFF],
    }


async def test_stats_say_when_consolidation_is_configured(client, app, monkeypatch):
    monkeypatch.setattr(app.state.settings.llm, "base_url", "http://llm.test/v1")
    body = await stats(client)
    assert (body["consolidation_configured"], body["warnings"]) == (True, [])


async def test_startup_warns_when_consolidation_is_not_configured(settings, caplog):
    application = create_app(settings)
    with caplog.at_level(logging.WARNING, logger="engram"):
        async with application.router.lifespan_context(application):
            pass
    assert any("CONSOLIDATION IS NOT CONFIGURED" in r.getMessage() for r in caplog.records)


async def test_episode_figures(client, sql):
    ids = [
        (await post(client, "/v1/episodes", butler="chat", content=f"turn {i}"))["id"]
        for i in range(3)
    ]
    await sql(
        "UPDATE episodes SET consolidation_status = 'consolidated', consolidated = true, "
        "created_at = now() - interval '30 hours' WHERE id = :id",
        id=uuid.UUID(ids[0]),
    )
    await sql(
        "UPDATE episodes SET created_at = now() - interval '5 hours' WHERE id = :id",
        id=uuid.UUID(ids[1]),
    )
    await sql(
        "UPDATE episodes SET expires_at = now() - interval '1 hour' WHERE id = :id",
        id=uuid.UUID(ids[2]),
    )
    figures = (await stats(client))["episodes"]
    assert figures["total"] == 3
    assert figures["unconsolidated"] == 2
    assert figures["backlog_age_hours"] == pytest.approx(5.0, abs=0.01)
    [oldest] = await sql("SELECT created_at FROM episodes WHERE id = :id", id=uuid.UUID(ids[1]))
    assert datetime.fromisoformat(figures["oldest_unconsolidated_at"]) == oldest["created_at"]
    assert figures["expired_unconsolidated"] == 1


async def test_fact_figures_by_validity_with_fading_split_out(client, sql):
    await post(client, "/v1/facts", subject="a", predicate="p", content="first")
    await post(client, "/v1/facts", subject="a", predicate="p", content="second")  # supersedes
    fading = await post(client, "/v1/facts", subject="b", predicate="p", content="fading")
    expired = await post(client, "/v1/facts", subject="c", predicate="p", content="expired")
    retracted = await post(client, "/v1/facts", subject="d", predicate="p", content="gone")
    await sql("UPDATE facts SET fading_since = now() WHERE id = :id", id=uuid.UUID(fading["id"]))
    await sql("UPDATE facts SET validity = 'expired' WHERE id = :id", id=uuid.UUID(expired["id"]))
    assert (await client.post(f"/v1/facts/{retracted['id']}/forget")).status_code == 200
    assert (await stats(client))["facts"] == {
        "active": 1,
        "fading": 1,
        "superseded": 1,
        "expired": 1,
        "retracted": 1,
    }


async def test_rule_figures_by_maturity_and_forgotten(client, sql):
    ids = [(await post(client, "/v1/rules", content=f"rule {i}"))["id"] for i in range(7)]
    for rule_id, maturity in zip(
        ids[1:5], ("established", "proven", "proven", "anti_pattern"), strict=True
    ):
        await sql(
            "UPDATE rules SET maturity = :m WHERE id = :id", m=maturity, id=uuid.UUID(rule_id)
        )
    for rule_id in ids[5:]:
        assert (await client.post(f"/v1/rules/{rule_id}/forget")).status_code == 200
    assert (await stats(client))["rules"] == {
        "candidate": 1,
        "established": 1,
        "proven": 2,
        "anti_pattern": 1,
        "forgotten": 2,
    }


async def test_scope_counts_global_and_scoped_facts_and_rules_and_that_butlers_episodes(
    client, sql
):
    for scope in ("global", "chat", "email"):
        await post(client, "/v1/facts", subject=scope, predicate="p", content="x", scope=scope)
        await post(client, "/v1/rules", content=f"rule {scope}", scope=scope)
        await post(client, "/v1/episodes", butler=scope, content="turn")
    figures = await stats(client, scope="chat")
    assert figures["scope"] == "chat"
    assert figures["facts"]["active"] == 2
    assert figures["rules"]["candidate"] == 2
    assert figures["episodes"]["total"] == 1
    everything = await stats(client)
    assert (
        everything["facts"]["active"],
        everything["rules"]["candidate"],
        everything["episodes"]["total"],
    ) == (3, 3, 3)


async def test_other_tenants_rows_are_not_counted(client, sql):
    await post(client, "/v1/facts", subject="a", predicate="p", content="mine")
    await sql(
        "INSERT INTO facts (tenant_id, subject, predicate, subject_key, predicate_key, "
        "content) VALUES ('other', 'a', 'p', 'a', 'p', 'theirs')"
    )
    assert (await stats(client))["facts"]["active"] == 1


async def test_forgotten_in_stored_metadata_steers_nothing(client, sql):
    await post(client, "/v1/rules", content="odd rule")
    await sql('UPDATE rules SET metadata = \'{"forgotten": "maybe", "status": "fading"}\'')
    assert (await stats(client))["rules"] == {
        "candidate": 1,
        "established": 0,
        "proven": 0,
        "anti_pattern": 0,
        "forgotten": 0,
    }
