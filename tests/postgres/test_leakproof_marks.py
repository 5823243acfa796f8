"""The functions the migrations mark LEAKPROOF (so filtered queries use their indexes under
row-level security) are marked again at start-up where the mark was lost, as after a
pg_upgrade or a restore into a new cluster; a role that may not mark them says so."""

import logging

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.main import create_app
from app.postgres import migrations

CONTAINMENT = "pg_catalog.jsonb_contains(jsonb, jsonb)"


async def _leakproof(engine: AsyncEngine, signature: str) -> bool:
    async with engine.connect() as conn:
        return bool(
            (
                await conn.execute(
                    text("SELECT proleakproof FROM pg_proc WHERE oid = to_regprocedure(:s)"),
                    {"s": signature},
                )
            ).scalar_one()
        )


async def _set(engine: AsyncEngine, signature: str, marker: str) -> None:
    async with engine.begin() as conn:
        await conn.execute(text(f"ALTER FUNCTION {signature} {marker}"))


@pytest.fixture
async def superuser_owner(app) -> AsyncEngine:
    engine: AsyncEngine = app.state.owner_engine
    async with engine.connect() as conn:
        if not (
            await conn.execute(text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
        ).scalar_one():
            pytest.fail("these tests need the owner to be a superuser, as embedded")
    return engine


async def test_a_lost_mark_is_set_again_at_start_up(app, superuser_owner, caplog):
    await _set(superuser_owner, CONTAINMENT, "NOT LEAKPROOF")
    try:
        with caplog.at_level(logging.INFO, logger="app.postgres.migrations"):
            await migrations.restore_leakproof_marks(superuser_owner)
        assert await _leakproof(superuser_owner, CONTAINMENT)
        assert any("jsonb_contains" in record.getMessage() for record in caplog.records)
    finally:
        await _set(superuser_owner, CONTAINMENT, "LEAKPROOF")


async def test_a_role_that_may_not_mark_says_what_it_costs(app, superuser_owner, caplog):
    await _set(superuser_owner, CONTAINMENT, "NOT LEAKPROOF")
    try:
        with caplog.at_level(logging.WARNING, logger="app.postgres.migrations"):
            await migrations.restore_leakproof_marks(app.state.db_engine)
        assert not await _leakproof(superuser_owner, CONTAINMENT)
        [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert "jsonb_contains" in warning.getMessage()
        assert "superuser" in warning.getMessage()
    finally:
        await _set(superuser_owner, CONTAINMENT, "LEAKPROOF")


async def test_the_lifespan_marks_them(app, settings, superuser_owner):
    await _set(superuser_owner, CONTAINMENT, "NOT LEAKPROOF")
    try:
        again = create_app(settings)
        async with again.router.lifespan_context(again):
            pass
        assert await _leakproof(superuser_owner, CONTAINMENT)
    finally:
        await _set(superuser_owner, CONTAINMENT, "LEAKPROOF")
