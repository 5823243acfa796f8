"""`engram backup` runs pg_basebackup without the database password on its command line,
where any local user could read it (`ps`); the password reaches libpq through PGPASSWORD."""

import os
from pathlib import Path

from app.postgres.backup import basebackup_call

TARGET = Path("/backups/base-20261128T000000Z")


def test_a_password_in_the_url_goes_to_the_environment_not_the_command_line() -> None:
    argv, env = basebackup_call(
        "/usr/bin/pg_basebackup",
        "postgresql://engram:s%40cret%20pw@db.example:5432/engram?sslmode=require",
        TARGET,
    )
    assert not any("s%40cret" in word or "s@cret" in word for word in argv)
    assert env["PGPASSWORD"] == "s@cret pw"
    url = argv[argv.index("-d") + 1]
    assert url == "postgresql://engram@db.example:5432/engram?sslmode=require"


def test_a_password_query_parameter_goes_to_the_environment_too() -> None:
    argv, env = basebackup_call(
        "pg_basebackup", "postgresql://engram@/engram?host=/run/pg&password=hunter2", TARGET
    )
    assert not any("hunter2" in word for word in argv)
    assert env["PGPASSWORD"] == "hunter2"
    assert argv[argv.index("-d") + 1] == "postgresql://engram@/engram?host=/run/pg"


def test_a_url_without_a_password_is_passed_as_it_is() -> None:
    url = "postgresql://postgres@/postgres?host=/tmp/sock"
    argv, env = basebackup_call("pg_basebackup", url, TARGET)
    assert argv[argv.index("-d") + 1] == url
    assert env.get("PGPASSWORD") == os.environ.get("PGPASSWORD")
    assert argv[:3] == ["pg_basebackup", "-D", str(TARGET)]
