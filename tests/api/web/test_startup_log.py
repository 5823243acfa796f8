"""Start-up says what it did in one INFO line per phase, each with its duration."""

import logging
import re

from app.main import create_app

PHASES = ["database ready", "migrations", "model loaded", "engram ready"]


async def test_start_up_logs_one_timed_line_per_phase(settings, caplog):
    app = create_app(settings.model_copy(update={"migrate_on_start": True}))
    with caplog.at_level(logging.INFO):
        async with app.router.lifespan_context(app):
            pass
    started = [
        record.getMessage()
        for record in caplog.records
        if record.levelno == logging.INFO and record.name == "engram"
    ]
    timed = [line for line in started if re.fullmatch(r".+ in \d+\.\d s", line)]
    assert [line.rsplit(" in ", 1)[0] for line in timed] == PHASES
    assert not [
        record
        for record in caplog.records
        if record.levelno >= logging.INFO and record.name.startswith("alembic")
    ]
